fn main() {
    let name = std::env::args().nth(1).unwrap();
    let m = if name.ends_with(".dsgd") {
        dsgd::lang::compile_file(std::path::Path::new(&name), &Default::default()).unwrap()
    } else {
        dsgd::models::builtin(&name).unwrap().unwrap()
    };
    if std::env::args().nth(2).is_some() {
        println!("{}", m.program);
    }
    for (i, n) in m.program.nodes().iter().enumerate() {
        if matches!(n, dsgd::ir::Node::If { .. }) {
            println!("%{i} = {n}");
        }
    }
    println!("{:?}", m.program.latent_names());
}
