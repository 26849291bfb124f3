//! Each primitive's descriptor (`dsgd::ir::Unary::info`, `Binary::info`) against its code:
//! the derivative reads exactly the values the descriptor declares (the tape's layout keeps
//! only those alive for the reverse sweep, so a derivative reading another would read a
//! reused place), the value and derivative are finite on the declared domain, the builder's
//! methods build the primitive they are named after, and the language's built-in functions
//! (derived from the table) apply, are documented, and are smooth where the table says.
//!
//! Not here: the compiled sweeps' forms (`eval_jit.rs`, which runs every primitive where its
//! descriptor says) and gradients against finite differences (`core_props.rs`).

use dsgd::ir::{
    Arity, Binary, Builder, Domain, Function, Node, Reads, Unary, Var, binary_derivatives,
    binary_value, unary_derivative, unary_value,
};

/// Arguments drawn from `domain` (every value finite, some at its edges).
fn samples(domain: Domain) -> &'static [f64] {
    match domain {
        Domain::Real => &[-3.0, -0.7, -0.0, 0.0, 0.4, 2.5],
        Domain::Positive => &[1e-3, 0.4, 1.0, 2.5, 30.0],
        Domain::NonZero => &[-2.5, -0.3, 0.2, 4.0],
        Domain::AboveMinusOne => &[-0.99, -0.5, 0.0, 0.4, 3.0],
        Domain::OpenUnit => &[1e-3, 0.2, 0.5, 0.9, 0.999],
    }
}

/// What an undeclared read is replaced by: a derivative that reads it gives other bits for
/// at least one of them.
const GARBAGE: [f64; 4] = [f64::NAN, 0.0, -1e300, 3.7];

/// Every unary primitive, `Powi` by several exponents (whose rows differ at 0).
fn unaries() -> Vec<Unary> {
    let powers = [0, 1, 2, -1, -2].map(Unary::Powi);
    Unary::ALL.iter().copied().chain(powers).collect()
}

/// `f` with the inputs `reads` does not declare replaced by each of [`GARBAGE`]: whether
/// every replacement gives `f`'s bits, and whether each declared read changes them for
/// some replacement (`[a, b, value]`).
fn probe(reads: Reads, inputs: [f64; 3], f: impl Fn([f64; 3]) -> f64) -> (bool, [bool; 3]) {
    let want = f(inputs).to_bits();
    let declared = [reads.a, reads.b, reads.value];
    let mut undeclared_ignored = true;
    let mut matters = [false; 3];
    for g in GARBAGE {
        let masked: [f64; 3] = std::array::from_fn(|i| if declared[i] { inputs[i] } else { g });
        undeclared_ignored &= f(masked).to_bits() == want;
        for (i, m) in matters.iter_mut().enumerate() {
            let mut one = inputs;
            one[i] = g;
            *m |= f(one).to_bits() != want;
        }
    }
    (undeclared_ignored, matters)
}

#[test]
fn each_unary_derivative_reads_exactly_what_its_row_declares() {
    for op in unaries() {
        let info = op.info();
        assert!(
            !info.reads.b,
            "{op}: a unary primitive has no second operand"
        );
        let mut matters = [false; 3];
        for &x in samples(info.domain) {
            let v = unary_value(op, x);
            let d = unary_derivative(op, x, v);
            assert!(
                v.is_finite() && d.is_finite(),
                "{op}({x}) = {v}, derivative {d}"
            );
            let (ignored, m) = probe(info.reads, [x, f64::NAN, v], |[x, _, v]| {
                unary_derivative(op, x, v)
            });
            assert!(
                ignored,
                "{op} at {x}: the derivative reads what its row does not declare"
            );
            (0..3).for_each(|i| matters[i] |= m[i]);
        }
        // Declaring more than is read is safe but keeps values alive for nothing.
        let declared = [info.reads.a, false, info.reads.value];
        if op != Unary::Powi(1) {
            assert_eq!(matters, declared, "{op}: declared reads never matter");
        }
    }
}

#[test]
fn each_binary_partial_reads_exactly_what_its_row_declares() {
    for &op in Binary::ALL {
        let info = op.info();
        for (partial, &reads) in info.reads.iter().enumerate() {
            let mut matters = [false; 3];
            for &a in samples(info.domain[0]) {
                for &b in samples(info.domain[1]) {
                    let v = binary_value(op, a, b);
                    let pick = |(da, db): (f64, f64)| if partial == 0 { da } else { db };
                    let d = pick(binary_derivatives(op, a, b, v));
                    assert!(v.is_finite() && d.is_finite(), "{op}({a}, {b}): {v}, {d}");
                    let (ignored, m) = probe(reads, [a, b, v], |[a, b, v]| {
                        pick(binary_derivatives(op, a, b, v))
                    });
                    assert!(
                        ignored,
                        "{op} at ({a}, {b}): partial {partial} reads what its row does not declare"
                    );
                    (0..3).for_each(|i| matters[i] |= m[i]);
                }
            }
            assert_eq!(
                matters,
                [reads.a, reads.b, reads.value],
                "{op}: partial {partial}'s declared reads never matter"
            );
        }
    }
}

/// The builder's method named after `op` (a new primitive needs an arm here, and a method).
fn method(op: Unary, x: Var<'_>) -> Var<'_> {
    match op {
        Unary::Neg => -x,
        Unary::Exp => x.exp(),
        Unary::Log => x.ln(),
        Unary::Log1p => x.ln_1p(),
        Unary::Expm1 => x.exp_m1(),
        Unary::Sqrt => x.sqrt(),
        Unary::Softplus => x.softplus(),
        Unary::Sigmoid => x.sigmoid(),
        Unary::Tanh => x.tanh(),
        Unary::Sin => x.sin(),
        Unary::Cos => x.cos(),
        Unary::Lgamma => x.lgamma(),
        Unary::Probit => x.probit(),
        Unary::NormalCdf => x.normal_cdf(),
        Unary::LogNormalCdf => x.log_normal_cdf(),
        Unary::Powi(n) => x.powi(n),
    }
}

/// The builder's operator or method for `op`.
fn operator<'b>(op: Binary, x: Var<'b>, y: Var<'b>) -> Var<'b> {
    match op {
        Binary::Add => x + y,
        Binary::Sub => x - y,
        Binary::Mul => x * y,
        Binary::Div => x / y,
        Binary::Pow => x.pow(y),
    }
}

#[test]
fn builder_methods_build_the_primitive_they_are_named_after() {
    for &op in Unary::ALL {
        let b = Builder::new();
        let z = b.latent("z");
        assert_eq!(method(op, z).id(), b.unary(op, z).id(), "{op}");
    }
    for &op in Binary::ALL {
        let b = Builder::new();
        let (z, w) = (b.latent("z"), b.latent("w"));
        assert_eq!(operator(op, z, w).id(), b.binary(op, z, w).id(), "{op}");
    }
}

#[test]
fn names_are_unique_and_built_in_functions_find_their_primitive() {
    let mut names: Vec<&str> = Unary::ALL.iter().map(|op| op.info().name).collect();
    names.extend(Binary::ALL.iter().map(|op| op.info().name));
    let count = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), count, "two primitives share a name");
    for &op in Unary::ALL {
        let info = op.info();
        let found = Unary::from_name(info.name);
        assert_eq!(found, info.function.then_some(op), "{op}");
        assert!(op.to_string().starts_with(info.name), "{op}");
    }
}

/// Applies `f` to latents and returns the program's nodes and if-statements.
fn applied(f: &Function) -> (Vec<Node>, usize) {
    let b = Builder::new();
    let zs = [b.latent("z"), b.latent("w")];
    let args = match f.arity {
        Arity::One => &zs[..1],
        Arity::Two | Arity::AtLeastOne => &zs[..],
    };
    let v = b
        .apply(f.name, args)
        .expect("a built-in applies to its arity");
    let p = b.finish(&[v]).expect("well formed");
    (p.nodes().to_vec(), p.if_count())
}

#[test]
fn built_in_functions_apply_and_are_smooth_where_the_table_says() {
    let functions: Vec<Function> = Function::all().collect();
    for f in &functions {
        let (nodes, ifs) = applied(f);
        assert_eq!(ifs == 0, f.smooth, "{}: {ifs} if-statements", f.name);
        if let Some(op) = Unary::from_name(f.name) {
            assert!(
                nodes
                    .iter()
                    .any(|n| matches!(n, Node::Unary(o, _) if *o == op)),
                "{} builds {op}",
                f.name
            );
        }
    }
    // Every primitive the language names is among them.
    for &op in Unary::ALL {
        let listed = functions.iter().any(|f| f.name == op.info().name);
        assert_eq!(listed, op.info().function, "{op}");
    }
    let b = Builder::new();
    assert!(b.apply("erf_of_nothing", &[b.latent("z")]).is_err());
}

#[test]
fn every_built_in_function_is_documented() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/language.md"))
        .expect("docs/language.md");
    let section = doc
        .split("## Built-in functions")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("a section of built-in functions");
    let words: Vec<&str> = section
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    for f in Function::all() {
        assert!(
            words.contains(&f.name),
            "`{}` is not in docs/language.md's built-in functions",
            f.name
        );
    }
}
