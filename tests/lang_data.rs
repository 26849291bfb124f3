//! Run-time data held packed: a data array bound from JSON or a flat buffer means exactly
//! what the same numbers written in the model mean (the same program, up to where its
//! constant nodes sit), costs no node per number, and bad data is refused naming the file,
//! the array and the index.

use dsgd::ir::{Node, NodeId, Program, Semantics};
use dsgd::lang::{CompileOptions, DataSet, DataValue, Resolver, compile_with_data};

/// No data files: these tests bind data at run time.
struct NoFiles;

impl Resolver for NoFiles {
    fn read(&self, _: &str) -> Result<String, String> {
        Err("no files here".to_string())
    }
}

fn compile(src: &str, data: &DataSet, opts: &CompileOptions) -> Result<dsgd::ir::Model, String> {
    compile_with_data("model.dsgd", src, &NoFiles, data, opts).map_err(|e| e.to_string())
}

fn json(text: &str) -> DataSet {
    DataSet::from_json_str(text, "d.json").unwrap()
}

/// The program with its constants written in place: each node that is not a constant, in
/// arena order, with its operands as constant bits or as the rank of a non-constant node
/// (the operands of `+` and `*` sorted, since the builder orders them by node id). Two
/// programs with equal descriptions compute the same thing in the same order.
fn described(p: &Program) -> Vec<String> {
    let mut rank = vec![usize::MAX; p.node_count()];
    let mut next = 0;
    for (i, n) in p.nodes().iter().enumerate() {
        if n.as_const().is_none() {
            rank[i] = next;
            next += 1;
        }
    }
    let operand = |id: NodeId| match p.node(id) {
        Node::Const(c) => format!("c{:x}", c.to_bits()),
        _ => format!("n{}", rank[id.index()]),
    };
    p.nodes()
        .iter()
        .filter(|n| n.as_const().is_none())
        .map(|n| match *n {
            Node::Binary(op, a, b) => {
                let mut ops = [operand(a), operand(b)];
                if matches!(format!("{op:?}").as_str(), "Add" | "Mul") {
                    ops.sort();
                }
                format!("{op:?} {} {}", ops[0], ops[1])
            }
            other => {
                let ops: Vec<String> = other.operands().map(operand).collect();
                match other {
                    Node::If { index, .. } => format!("if#{index} {}", ops.join(" ")),
                    Node::Unary(op, _) => format!("{op:?} {}", ops.join(" ")),
                    _ => other.to_string(),
                }
            }
        })
        .collect()
}

/// A model that reads its data every way the language allows: indexing in a loop and with
/// constants, rows of a matrix, a ragged array, `len`, `sum`, `mean`, comparisons, passing
/// an array to a function, an if-expression choosing between arrays, and assigning into a
/// copy. The second row of `m` sums to 1e-16 left to right, to more right to left.
const MODEL: &str = "
fn scaled(v, i, s) { v[i] * s }
let a = sample Normal(0, 5);
let b = sample Normal(0, 5);
let w = if a < 0 { x } else { y };
let c = x;
c[1] = a;
for i in 0..n {
  observe y[i] ~ Bernoulli(if a + b * x[i] < 0 { 0.1 } else { 0.9 });
  factor scaled(x, i, b) + w[i] + c[i] * m[1][i] - m[0][i];
}
if x[0] < x[1] { factor a; }
factor mean(x) * a + sum(y) * b + len(x) + sum(m[1]) * a + mean(m[1]) * b + r[1][1] + len(r[0]);
";

const DATA: &str = r#"{"n": 4, "x": [0.5, -1.25, 2, 0.125], "y": [1, 0, 1, 1],
  "m": [[1, 2, 3, 4], [1, 1e-16, -1, 1e-16]], "r": [[1], [2, 3]]}"#;

const INLINE: &str = "data n = 4;
data x = [0.5, -1.25, 2, 0.125];
data y = [1, 0, 1, 1];
data m = [[1, 2, 3, 4], [1, 1e-16, -1, 1e-16]];
data r = [[1], [2, 3]];";

/// Catches a packed array that lowers differently from the same numbers written in the
/// model: another value read, a sum folded in another order, a merge or an assignment that
/// drops an element.
#[test]
fn packed_data_lowers_to_the_program_of_the_same_numbers_written_in_the_model() {
    let declared = format!("data n; data x; data y; data m; data r;\n{MODEL}");
    let inline = format!("{INLINE}\n{MODEL}");
    let opts = CompileOptions::default();
    let packed = compile(&declared, &json(DATA), &opts).unwrap();
    let written = compile(&inline, &DataSet::default(), &opts).unwrap();
    assert_eq!(described(&packed.program), described(&written.program));
    assert_eq!(packed.program.node_count(), written.program.node_count());
    assert_eq!(packed.program.if_count(), written.program.if_count());
    for z in [[-1.0, 0.3], [0.7, -2.0], [2.0, 1.5]] {
        for s in [Semantics::Crisp, Semantics::Smoothed { eta: 0.1 }] {
            let v = |m: &dsgd::ir::Model| m.program.evaluate(s, &[], &z).to_bits();
            assert_eq!(v(&packed), v(&written), "{z:?}");
        }
    }
    // The numpy route (flat buffers with shapes) gives the same program again.
    let mut set = DataSet::new("dict");
    set.insert_array("n", &[], &[4.0]).unwrap();
    set.insert_array("x", &[4], &[0.5, -1.25, 2.0, 0.125])
        .unwrap();
    set.insert_array("y", &[4], &[1.0, 0.0, 1.0, 1.0]).unwrap();
    set.insert_array("m", &[2, 4], &[1.0, 2.0, 3.0, 4.0, 1.0, 1e-16, -1.0, 1e-16])
        .unwrap();
    let ragged = json(DATA);
    set.insert("r", ragged.get("r").unwrap().clone()).unwrap();
    let from_buffers = compile(&declared, &set, &opts).unwrap();
    assert_eq!(
        described(&from_buffers.program),
        described(&written.program)
    );
}

/// Catches a number that costs a node when it is bound rather than read: a million rows
/// with a sum, a mean and two elements read compile within a 100-node limit, and the sum
/// is the one added left to right.
#[test]
fn a_million_rows_cost_no_nodes_until_read() {
    let n = 1_000_000;
    let x: Vec<f64> = (0..n)
        .map(|i| ((i * 7919) % 1000) as f64 * 0.001 - 0.3)
        .collect();
    let mut set = DataSet::new("dict");
    set.insert_packed("x", &[n], x.clone().into()).unwrap();
    set.insert_packed("w", &[n / 2, 2], x.clone().into())
        .unwrap();
    let src = "data x; data w;
let a = sample Normal(0, 1);
observe sum(x) ~ Normal(a, 1);
observe mean(x) + x[999999] + w[499999][1] + len(x) + len(w) ~ Normal(a, 1);";
    let opts = CompileOptions {
        node_limit: 100,
        ..CompileOptions::default()
    };
    let m = compile(src, &set, &opts).unwrap();
    let total = x.iter().fold(0.0, |acc, &v| acc + v);
    let second = total / n as f64 + x[n - 1] + x[n - 1] + n as f64 + (n / 2) as f64;
    let normal =
        |v: f64, mu: f64| -0.5 * (v - mu).powi(2) - 0.5 * (2.0 * std::f64::consts::PI).ln();
    let a = 0.25;
    let want = normal(a, 0.0) + normal(total, a) + normal(second, a);
    let got = m.program.evaluate(Semantics::Crisp, &[], &[a]);
    assert!((got - want).abs() <= 1e-9 * want.abs(), "{got} vs {want}");
}

/// Catches a JSON reader that packs arrays of different shapes together, or does not pack
/// a rectangular one.
#[test]
fn json_arrays_are_packed_when_rectangular() {
    let d = json(
        r#"{"a": [[1, 2], [3, 4], [5, 6]], "b": [1, [2]], "c": [], "e": [[], []], "f": [[1], [2, 3]]}"#,
    );
    let Some(DataValue::Numbers(a)) = d.get("a") else {
        panic!("{:?}", d.get("a"))
    };
    assert_eq!(a.dims(), &[3, 2]);
    assert_eq!(&a.values()[..], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert!(matches!(d.get("b"), Some(DataValue::Array(items)) if items.len() == 2));
    assert!(matches!(d.get("c"), Some(DataValue::Numbers(p)) if p.dims() == [0]));
    assert!(matches!(d.get("e"), Some(DataValue::Numbers(p)) if p.dims() == [2, 0]));
    assert!(matches!(d.get("f"), Some(DataValue::Array(items)) if items.len() == 2));
    // `DataValue::array` gives one form for one value, whichever way it is built.
    assert_eq!(
        DataValue::array(vec![DataValue::Num(1.0), DataValue::Num(2.0)]),
        DataValue::from_packed(&[2], vec![1.0, 2.0].into()).unwrap()
    );
}

fn refused(src: &str, data: &DataSet) -> String {
    let e = compile(src, data, &CompileOptions::default()).unwrap_err();
    assert_eq!(e.matches("error:").count(), 1, "{e}");
    e
}

/// Catches a ragged column refused without the file, the row or the reason.
#[test]
fn a_ragged_column_is_refused_naming_the_file_the_row_and_the_index() {
    let src = "data n; data x;
let z = sample Normal(0, 1);
for i in 0..n { observe x[i][1] ~ Normal(z, 1); }";
    let e = refused(src, &json(r#"{"n": 3, "x": [[1, 2], [3, 4], [5]]}"#));
    assert!(
        e.contains("index 1 is out of range for data `x[2]` (from d.json), which has 1 element(s)"),
        "{e}"
    );
    assert!(
        e.contains("the rows of `x` have different lengths (2, 2, 1)"),
        "{e}"
    );
    assert!(e.contains("model.dsgd:3:"), "{e}");
}

/// Catches a row count `n` that disagrees with a column, refused without naming which.
#[test]
fn a_row_count_longer_than_a_column_is_refused_naming_the_column() {
    let src = "data n; data x; data y;
let z = sample Normal(0, 1);
for i in 0..n { observe y[i] ~ Normal(z * x[i], 1); }";
    let e = refused(src, &json(r#"{"n": 3, "x": [1, 2, 3], "y": [1, 2]}"#));
    assert!(
        e.contains("index 2 is out of range for data `y` (from d.json), which has 2 element(s)"),
        "{e}"
    );
}

/// Catches a NaN or infinity from a buffer (numpy can hold them, JSON cannot) bound
/// silently, or refused without the array and the index.
#[test]
fn non_finite_numbers_in_buffers_are_refused_with_the_array_and_the_index() {
    let mut set = DataSet::new("data");
    let e = set
        .insert_array("x", &[2, 3], &[1.0, 2.0, 3.0, 4.0, f64::NAN, 6.0])
        .unwrap_err()
        .to_string();
    assert!(e.contains("data: `x[1][1]` is NaN"), "{e}");
    let e = set
        .insert_packed("y", &[3], vec![0.0, 1.0, f64::NEG_INFINITY].into())
        .unwrap_err()
        .to_string();
    assert!(e.contains("`y[2]` is -inf"), "{e}");
    assert!(set.is_empty());
}

/// A data file of one column, many rows.
struct OneColumn(usize);

impl Resolver for OneColumn {
    fn read(&self, path: &str) -> Result<String, String> {
        match path {
            "rows.csv" => Ok(std::iter::once("x".to_string())
                .chain((0..self.0).map(|i| format!("{}", (i % 10) as f64 * 0.5)))
                .collect::<Vec<_>>()
                .join("\n")),
            _ => Err("no such file".to_string()),
        }
    }
}

/// Catches packed numbers counted as steps where they are declared, gathered into an array
/// or summed: a `csv` column of 10^6 rows, declared, put in an array three times and summed,
/// compiles within 40,000 steps (reading and parsing the file's 3.5 MB count a step per 256
/// bytes each).
#[test]
fn a_csv_column_costs_steps_for_its_bytes_not_its_rows() {
    let src = "data x = csv(\"rows.csv\", \"x\");
data three = [x, x, x];
let a = sample Normal(0, 1);
observe sum(three[2]) + len(three) ~ Normal(a, 1);";
    let opts = CompileOptions {
        step_limit: 40_000,
        node_limit: 100,
        ..CompileOptions::default()
    };
    let m = compile_with_data(
        "m.dsgd",
        src,
        &OneColumn(1_000_000),
        &DataSet::default(),
        &opts,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let total = (0..1_000_000).fold(0.0, |acc, i| acc + (i % 10) as f64 * 0.5);
    let a = 0.5;
    let normal =
        |v: f64, mu: f64| -0.5 * (v - mu).powi(2) - 0.5 * (2.0 * std::f64::consts::PI).ln();
    let want = normal(a, 0.0) + normal(total + 3.0, a);
    let got = m.program.evaluate(Semantics::Crisp, &[], &[a]);
    assert!((got - want).abs() <= 1e-9 * want.abs(), "{got} vs {want}");
    // The same column in a smaller step budget than its bytes is refused, naming the limit.
    let tight = CompileOptions {
        step_limit: 10_000,
        ..CompileOptions::default()
    };
    let e = compile_with_data(
        "m.dsgd",
        src,
        &OneColumn(1_000_000),
        &DataSet::default(),
        &tight,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("steps"), "{e}");
}

/// Numbers in `--data` JSON are read correctly rounded, as Rust's `str::parse` and Python's
/// `json` read them: the same data give the same bits from a file and from numpy. (The JSON
/// reader's fast path was up to an ulp off for long decimals.)
#[test]
fn json_data_numbers_are_read_correctly_rounded() {
    // Deterministic decimals of 15 to 19 significant digits over many magnitudes.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let texts: Vec<String> = (0..5000)
        .map(|_| {
            let digits = 15 + next() % 5;
            let mantissa = next() % 10u64.pow(digits as u32);
            let exp = (next() % 40) as i32 - 20;
            format!("{mantissa}e{exp}")
        })
        .chain((1..999).map(|k| format!("{:?}", k as f64 / 998.0)))
        .collect();
    let json = format!(r#"{{"x": [{}]}}"#, texts.join(","));
    let set = dsgd::lang::DataSet::from_json_str(&json, "t.json").unwrap();
    let Some(dsgd::lang::DataValue::Numbers(p)) = set.get("x") else {
        panic!("a packed array")
    };
    for (t, &v) in texts.iter().zip(p.values().iter()) {
        let want: f64 = t.parse().unwrap();
        assert_eq!(
            v.to_bits(),
            want.to_bits(),
            "{t}: read {v:?}, correctly rounded {want:?}"
        );
    }
}
