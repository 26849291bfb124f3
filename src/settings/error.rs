//! A refused setting: which options, why, and whether it is a value out of range or more
//! memory than the machine has; rendered as the command line or Python names options.

use std::fmt;

/// What kind of refusal: Python raises `ValueError` for one and `MemoryError` for the other.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SettingKind {
    /// A value out of its range, or of the wrong kind.
    Invalid,
    /// A setting whose memory (or whose size in a machine word) cannot fit.
    Memory,
}

/// How a front end names an option: `--log-samples` or `log_samples`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Style {
    /// The command line: `--log-samples 5`.
    Flag,
    /// Python's keywords: `log_samples=5` (also the library's own messages).
    Keyword,
}

impl Style {
    /// An option's name (given in Python's spelling, `log_samples`) in this style.
    pub fn name(self, option: &str) -> String {
        match self {
            Style::Flag => format!("--{}", option.replace('_', "-")),
            Style::Keyword => option.to_string(),
        }
    }

    /// An option with the value given: `--batch 16` or `batch=16`.
    pub fn given(self, option: &str, value: &str) -> String {
        match self {
            Style::Flag => format!("{} {value}", self.name(option)),
            Style::Keyword => format!("{option}={value}"),
        }
    }
}

/// A refused setting. The message is "options, then why": `eta must be positive and finite,
/// got -1`, or `batch=100000000000 with log_samples=1000 and threads=2 would need about ...`.
#[derive(Clone, Debug, PartialEq)]
pub struct SettingError {
    /// Value or memory.
    pub kind: SettingKind,
    /// The options at fault (Python's spelling), with the value given where the message
    /// shows it up front.
    options: Vec<(&'static str, Option<String>)>,
    /// What is wrong, after the options' names.
    why: String,
}

impl SettingError {
    /// `option` has a value out of range: `why` follows its name (`must be at least 1, got 0`).
    pub fn invalid(option: &'static str, why: impl Into<String>) -> SettingError {
        SettingError {
            kind: SettingKind::Invalid,
            options: vec![(option, None)],
            why: why.into(),
        }
    }

    /// A combination of `options` (with their values) needs more memory than there is.
    pub fn memory(options: Vec<(&'static str, String)>, why: impl Into<String>) -> SettingError {
        SettingError {
            kind: SettingKind::Memory,
            options: options.into_iter().map(|(o, v)| (o, Some(v))).collect(),
            why: why.into(),
        }
    }

    /// The reason alone, without the options' names (what clap prints after the flag).
    pub fn why(&self) -> &str {
        &self.why
    }

    /// The first option at fault, in Python's spelling.
    pub fn option(&self) -> &'static str {
        self.options.first().map_or("", |(o, _)| o)
    }

    /// The whole message, naming the options in `style`.
    pub fn render(&self, style: Style) -> String {
        let named: Vec<String> = self
            .options
            .iter()
            .map(|(o, v)| match v {
                Some(v) => style.given(o, v),
                None => style.name(o),
            })
            .collect();
        let head = match named.as_slice() {
            [] => String::new(),
            [one] => one.clone(),
            [first, rest @ ..] => {
                let (last, middle) = rest.split_last().unwrap_or((first, &[]));
                let mut s = format!("{first} with ");
                if !middle.is_empty() {
                    s += &middle.join(", ");
                    s += " and ";
                }
                s += last;
                s
            }
        };
        if head.is_empty() {
            self.why.clone()
        } else {
            format!("{head} {}", self.why)
        }
    }
}

impl fmt::Display for SettingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(Style::Keyword))
    }
}

impl std::error::Error for SettingError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_named_in_each_front_end_s_words() {
        let e = SettingError::invalid("log_samples", "must be at least 2, got 1");
        assert_eq!(
            e.render(Style::Flag),
            "--log-samples must be at least 2, got 1"
        );
        assert_eq!(e.to_string(), "log_samples must be at least 2, got 1");
        let m = SettingError::memory(
            vec![
                ("batch", "5".into()),
                ("log_samples", "7".into()),
                ("threads", "2".into()),
            ],
            "would need too much",
        );
        assert_eq!(
            m.render(Style::Flag),
            "--batch 5 with --log-samples 7 and --threads 2 would need too much"
        );
        assert_eq!(
            m.render(Style::Keyword),
            "batch=5 with log_samples=7 and threads=2 would need too much"
        );
        let two = SettingError::memory(vec![("iters", "9".into()), ("log_every", "1".into())], "x");
        assert_eq!(two.render(Style::Flag), "--iters 9 with --log-every 1 x");
        assert_eq!(two.kind, SettingKind::Memory);
    }
}
