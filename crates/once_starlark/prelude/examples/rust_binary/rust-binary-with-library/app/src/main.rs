//! Greets the first argument using the `greeting` library.

fn main() {
    let name = std::env::args().nth(1).unwrap_or_else(|| "stranger".to_owned());
    println!("{}", greeting::greet(&name));
}
