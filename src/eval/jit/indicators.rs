//! Which smoothed if-statements are indicators: those choosing between the constants 1 and
//! 0, whose value is one of their weights (the forward code takes it with no arithmetic) and
//! whose branches differ by exactly 1 (the reverse code multiplies by a constant instead of
//! loading both and subtracting).

use std::collections::HashSet;

/// The places that hold the constants 1 and 0 for good (`Layout::constants`): a smoothed
/// if-statement choosing between them (an indicator, `if x >= c { 1 } else { 0 }`) has a
/// weight as its value.
pub(super) struct Indicators {
    one: HashSet<u32>,
    zero: HashSet<u32>,
}

/// Which weight a smoothed if-statement between the constants 1 and 0 takes as its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Indicator {
    /// 1 in the then branch, 0 in the else branch: the then weight.
    Then,
    /// 0 in the then branch, 1 in the else branch: the else weight.
    Else,
}

impl Indicators {
    pub(super) fn of(constants: &[(u32, f64)]) -> Indicators {
        let places = |c: f64| {
            constants
                .iter()
                .filter(|&&(_, v)| v.to_bits() == c.to_bits())
                .map(|&(s, _)| s)
                .collect()
        };
        Indicators {
            one: places(1.0),
            zero: places(0.0),
        }
    }

    /// [`Self::between`] as a number (none 0, then 1, else 2): a decision every iteration of
    /// a loop must share (`repeat.rs`).
    pub(super) fn decision(&self, t: u32, e: u32) -> u8 {
        match self.between(t, e) {
            None => 0,
            Some(Indicator::Then) => 1,
            Some(Indicator::Else) => 2,
        }
    }

    /// Whether the branches' places `t` and `e` hold 1 and 0 (or 0 and 1).
    pub(super) fn between(&self, t: u32, e: u32) -> Option<Indicator> {
        if self.one.contains(&t) && self.zero.contains(&e) {
            Some(Indicator::Then)
        } else if self.zero.contains(&t) && self.one.contains(&e) {
            Some(Indicator::Else)
        } else {
            None
        }
    }
}
