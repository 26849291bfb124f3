//! The documents' commands run as written and print what the documents say: the README's
//! `dsgd run` lines end "converged" at the right answer, and every command of
//! `docs/first-model.md` whose output the page shows prints that output (its verdict, values
//! and warnings; only the run time may differ). A change that moves a documented number
//! fails here until the page is regenerated.

mod cli_common;

use std::path::{Path, PathBuf};

use cli_common::{dsgd_in, tempdir};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root above cli/")
        .to_path_buf()
}

/// The fenced blocks of a Markdown file: (info string, body lines).
fn blocks(path: &Path) -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    let mut open: Option<(String, Vec<String>)> = None;
    for line in text.lines() {
        if let Some(info) = line.strip_prefix("```") {
            match open.take() {
                Some(b) => out.push(b),
                None => open = Some((info.trim().to_string(), Vec::new())),
            }
        } else if let Some((_, body)) = open.as_mut() {
            body.push(line.to_string());
        }
    }
    out
}

/// A command line's arguments after `dsgd`, its comment cut, `results/` moved to `out`.
fn args(line: &str, out: &Path) -> Vec<String> {
    let line = line.split(" #").next().unwrap();
    line.split_whitespace()
        .skip(1)
        .map(|a| match a.strip_prefix("results/") {
            Some(rest) => out.join(rest).to_string_lossy().into_owned(),
            None => a.to_string(),
        })
        .collect()
}

/// The README's `dsgd run` lines (its Usage block) end "converged", at the answer: the
/// counts model's posterior mean is Gamma(27, 9)'s, 3, within its sd over 10 (a mean-field
/// guide on `log(rate)` is close to it); Example 1.1's optimum is 0.3722.
#[test]
fn the_readme_s_run_commands_converge_at_the_right_answer() {
    let out = tempdir("docs", "readme");
    let usage = blocks(&root().join("README.md"))
        .into_iter()
        .find(|(info, body)| info == "sh" && body.iter().any(|l| l.starts_with("dsgd check")))
        .expect("the Usage block");
    let runs: Vec<&String> = usage
        .1
        .iter()
        .filter(|l| l.starts_with("dsgd run "))
        .collect();
    assert!(runs.len() >= 2, "{runs:?}");
    for line in runs {
        let mut a = args(line, &out);
        a.push("--json".into());
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let o = dsgd_in(&root(), &a);
        let r = cli_common::json(&o);
        assert_eq!(r["converged"], true, "{line}: {}", r["convergence"]);
        if line.contains("counts.dsgd") {
            let mean = r["latents"][0]["mean"].as_f64().unwrap();
            assert!((mean - 3.0).abs() < 0.058, "{line}: rate {mean}");
        } else if line.contains("example.dsgd") {
            let theta = r["params"]["theta"].as_f64().unwrap();
            assert!((theta - 0.3722).abs() < 0.01, "{line}: theta {theta}");
        } else {
            panic!("a README run without a known answer: {line}");
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// Lines as the page prints them: folded lines joined (a continuation is indented by four
/// spaces), the run time masked.
fn unfold(lines: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in lines {
        match (l.strip_prefix("    "), out.last_mut()) {
            (Some(rest), Some(prev)) if !rest.starts_with(' ') => {
                prev.push(' ');
                prev.push_str(rest);
            }
            _ => out.push(l.clone()),
        }
    }
    out.into_iter().map(|l| mask_time(&l)).collect()
}

fn mask_time(line: &str) -> String {
    match (line.find(" iterations in "), line.find(" s (")) {
        (Some(a), Some(b)) if a < b => format!("{}{}", &line[..a + 15], &line[b..]),
        _ => line.to_string(),
    }
}

/// Every `dsgd` command of the first-model page followed by its output prints that output
/// (stdout, then stderr's warnings), but `advise`, whose costs are timed.
#[test]
fn the_first_model_page_s_commands_print_what_it_shows() {
    let out = tempdir("docs", "first-model");
    let bs = blocks(&root().join("docs/first-model.md"));
    let mut checked = 0;
    for (i, (info, cmd)) in bs.iter().enumerate() {
        if info != "sh" || cmd.len() != 1 {
            continue;
        }
        let line = &cmd[0];
        if !line.starts_with("dsgd ") || line.starts_with("dsgd advise") {
            continue;
        }
        let a = args(line, &out);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        // Run in the page's order (a command may read what an earlier one wrote).
        let o = dsgd_in(&root(), &a);
        let Some((_, shown)) = bs.get(i + 1).filter(|(next, _)| next.is_empty()) else {
            assert!(o.status.success(), "{line}: {}", cli_common::stderr(&o));
            continue;
        };
        let printed: Vec<String> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .chain(String::from_utf8_lossy(&o.stderr).lines())
            .map(mask_time)
            .collect();
        let want = unfold(shown);
        assert_eq!(printed, want, "{line}");
        checked += 1;
    }
    assert!(checked >= 8, "only {checked} commands with their output");
    let _ = std::fs::remove_dir_all(&out);
}
