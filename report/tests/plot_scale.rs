//! The y-scales of the plotting module: symlog is monotone, invertible and ticked at real
//! values; `Auto` picks symlog exactly when the data span orders of magnitude; colours and
//! styles follow the keys.

use dsgd_report::plot::{
    LinePlot, LineStyle, ResolvedScale, STYLE_CYCLE, Series, SymLog, YScale, assign,
    format_symlog_tick, format_tick,
};
use proptest::prelude::*;

fn grid() -> Vec<f64> {
    let mut ys = vec![0.0];
    for e in -8..=8 {
        for m in [1.0, 1.5, 3.0, 7.0] {
            let y = m * 10f64.powi(e);
            ys.push(y);
            ys.push(-y);
        }
    }
    ys.sort_by(f64::total_cmp);
    ys
}

#[test]
fn symlog_is_strictly_increasing_and_invertible_on_a_grid() {
    for linthresh in [1e-3, 1.0, 10.0, 1e4] {
        let s = SymLog::new(linthresh).unwrap();
        let ys = grid();
        for w in ys.windows(2) {
            assert!(
                s.forward(w[0]) < s.forward(w[1]),
                "{linthresh}: {} {}",
                w[0],
                w[1]
            );
        }
        for y in ys {
            let back = s.inverse(s.forward(y));
            assert!(
                (back - y).abs() <= 1e-12 * y.abs().max(linthresh),
                "{y} -> {back}"
            );
        }
        // Odd, and linear near zero with slope 1 / (linthresh ln 10).
        assert_eq!(s.forward(-2.5 * linthresh), -s.forward(2.5 * linthresh));
        let h = 1e-6 * linthresh;
        let slope = s.forward(h) / h;
        let expected = 1.0 / (linthresh * std::f64::consts::LN_10);
        assert!((slope / expected - 1.0).abs() < 1e-5);
    }
}

proptest! {
    #[test]
    fn symlog_round_trips_and_orders_random_values(
        a in -1e12f64..1e12, b in -1e12f64..1e12, lt in 1e-3f64..1e3,
    ) {
        let s = SymLog::new(lt).unwrap();
        prop_assert!((s.inverse(s.forward(a)) - a).abs() <= 1e-11 * a.abs().max(lt));
        if a < b {
            prop_assert!(s.forward(a) < s.forward(b));
        }
    }
}

#[test]
fn symlog_ticks_are_labelled_with_real_values() {
    let s = SymLog::new(10.0).unwrap();
    let ticks = s.ticks(-2e6, -60.0, 9);
    assert_eq!(ticks, vec![-1e6, -1e5, -1e4, -1e3, -100.0]);
    let labels: Vec<String> = ticks.iter().map(|&t| format_symlog_tick(t)).collect();
    assert_eq!(labels, ["−10⁶", "−10⁵", "−10⁴", "−10³", "−100"]);

    // Across zero: zero is a tick, ticks are sorted, symmetric, and thinned to the budget.
    let s = SymLog::new(1e-3).unwrap();
    let ticks = s.ticks(-1e12, 1e12, 9);
    assert!(ticks.contains(&0.0));
    assert!(ticks.len() <= 9, "{ticks:?}");
    assert!(ticks.windows(2).all(|w| w[0] < w[1]));
    assert!(ticks.iter().all(|t| ticks.contains(&-t)));

    // A range within one decade still gets readable ticks.
    let ticks = SymLog::new(1.0).unwrap().ticks(-80.0, -50.0, 8);
    assert!(ticks.len() >= 3, "{ticks:?}");
    assert!(ticks.iter().all(|t| (-80.0..=-50.0).contains(t)));
}

#[test]
fn tick_labels() {
    assert_eq!(format_tick(0.0), "0");
    assert_eq!(format_tick(-0.5), "−0.5");
    assert_eq!(format_tick(4000.0), "4000");
    assert_eq!(format_tick(0.1 + 0.2), "0.3");
    assert_eq!(format_tick(1e-6), "10⁻⁶");
    assert_eq!(format_tick(3e7), "3×10⁷");
    assert_eq!(format_symlog_tick(1e3), "10³");
}

fn trajectory(end: f64) -> Vec<(f64, f64)> {
    (0..=100)
        .map(|i| {
            let k = f64::from(i) * 100.0;
            (k, end + (-2e6 - end) * (-k / 500.0).exp())
        })
        .collect()
}

#[test]
fn auto_picks_symlog_only_for_data_spanning_orders_of_magnitude() {
    let wide = vec![
        Series::new("dsgd", "dsgd", "0.1", trajectory(-60.0)),
        Series::new("score", "score", "", vec![(0.0, -2e6), (1e4, -1.5e6)]),
    ];
    match YScale::Auto.resolve(&wide).unwrap() {
        ResolvedScale::SymLog(s) => assert_eq!(s.linthresh(), 10.0),
        other => panic!("expected symlog, got {other:?}"),
    }
    let mut plot = LinePlot::new("t", "iteration", "ELBO");
    plot.series = wide;
    assert_eq!(
        plot.y_axis_label().unwrap(),
        "ELBO (symlog scale, linear within ±10)"
    );

    let narrow = vec![Series::new(
        "a",
        "a",
        "",
        vec![(0.0, -80.0), (1.0, -55.0), (2.0, f64::NAN)],
    )];
    assert_eq!(
        YScale::Auto.resolve(&narrow).unwrap(),
        ResolvedScale::Linear
    );
    assert_eq!(YScale::Auto.resolve(&[]).unwrap(), ResolvedScale::Linear);

    plot.y_scale = YScale::Clip {
        lo: -1000.0,
        hi: -40.0,
    };
    assert_eq!(
        plot.y_axis_label().unwrap(),
        "ELBO (clipped to [−1000, −40])"
    );
}

#[test]
fn bad_scale_parameters_are_errors() {
    assert!(SymLog::new(0.0).is_err());
    assert!(SymLog::new(f64::NAN).is_err());
    assert!(YScale::SymLog { linthresh: -1.0 }.resolve(&[]).is_err());
    assert!(YScale::Clip { lo: 1.0, hi: 1.0 }.resolve(&[]).is_err());
    assert!(
        YScale::Clip {
            lo: f64::NEG_INFINITY,
            hi: 0.0
        }
        .resolve(&[])
        .is_err()
    );
}

#[test]
fn colours_follow_estimators_and_styles_follow_sorted_etas() {
    let s = |c: &str, st: &str| Series::new("", c, st, vec![]);
    let a = assign(&[
        s("fixed", "0.1"),
        s("DSGD", "0.06"),
        s("fixed", "0.06"),
        s("mystery", ""),
    ]);
    let b = assign(&[s("dsgd", "0.22")]);
    // Same estimator, same colour, whatever the order or case.
    assert_eq!(a.colours[1], b.colours[0]);
    assert_eq!(a.colours[0], a.colours[2]);
    assert_ne!(a.colours[0], a.colours[1]);
    assert_ne!(a.colours[3], a.colours[0]);
    // eta 0.06 takes the first style of the paper's order even though 0.1 came first.
    assert_eq!(a.styles[1], STYLE_CYCLE[0]);
    assert_eq!(a.styles[0], STYLE_CYCLE[1]);
    assert_eq!(a.styles[3], LineStyle::Solid);
    let c = assign(&[s("x", "0.06").with_style(LineStyle::Dotted)]);
    assert_eq!(c.styles[0], LineStyle::Dotted);
}
