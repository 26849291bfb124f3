//! What the tests that run the `dsgd` binary share.

use std::process::Output;

/// The JSON a successful command printed (the command's stderr if it failed).
pub fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
