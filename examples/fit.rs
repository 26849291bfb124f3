//! Fit a model of your own from Rust: a coin whose bias switches at an unknown threshold.
//! Run with `cargo run --release --example fit`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = dsgd::compile(
        "switch.dsgd",
        "data x = [-1.5, -0.5, 0.5, 1.5];
         data heads = [0, 0, 1, 1];
         let t = sample Normal(0, 2);                 // the threshold
         for i in 0..4 {
           let p = if x[i] > t { 0.9 } else { 0.1 };  // the bias switches at t
           observe heads[i] ~ Bernoulli(p);
         }",
    )?;
    let config = dsgd::RunConfig {
        iterations: 5000,
        seed: 1,
        ..dsgd::RunConfig::default()
    };
    let report = dsgd::fit(&model, &config)?;
    println!(
        "final ELBO {:.3} ({})",
        report.final_value, report.convergence
    );
    for z in &report.latents {
        println!(
            "{}: mean {:.3}, sd {:.3}, 90% in [{:.3}, {:.3}]",
            z.name, z.mean, z.sd, z.q05, z.q95
        );
    }
    let draws = report.draws(5, 42)?;
    println!(
        "five posterior draws of t: {:?}",
        draws.rows.iter().map(|r| r[0]).collect::<Vec<_>>()
    );
    Ok(())
}
