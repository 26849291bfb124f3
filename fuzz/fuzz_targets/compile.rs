//! libFuzzer target: any bytes, as model source, compile to a model or a rendered error,
//! never a panic, a stack overflow or a hang. Run with
//! `cargo fuzz run -s none compile -- -max_total_time=600` (stable needs `-s none`).
#![no_main]

use dsgd::lang::{CompileOptions, Resolver, compile_with};
use libfuzzer_sys::fuzz_target;

struct NoFiles;

impl Resolver for NoFiles {
    fn read(&self, path: &str) -> Result<String, String> {
        if path == "d.csv" { Ok("a,b\n1,2\n3,x\n".to_string()) } else { Err("not found".to_string()) }
    }
}

fuzz_target!(|data: &[u8]| {
    let src = String::from_utf8_lossy(data);
    let opts = CompileOptions { node_limit: 20_000, step_limit: 200_000, max_call_depth: 200 };
    if let Err(e) = compile_with("fuzz.dsgd", &src, &NoFiles, &opts) {
        let _ = e.to_string();
    }
});
