//! `greeter [NAME…]`: prints a greeting for the given names.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let names: Vec<&str> = args.iter().map(String::as_str).filter(|a| *a != "world").collect();
    println!("{}", greeting::greet(&names));
}
