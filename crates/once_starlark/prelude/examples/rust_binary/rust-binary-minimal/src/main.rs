//! Prints a greeting for the first argument.

fn main() {
    let name = std::env::args().nth(1).unwrap_or_else(|| "stranger".to_owned());
    println!("hello, {name}");
}
