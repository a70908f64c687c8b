fn main() {
    println!("{}", lib::answer());
}
