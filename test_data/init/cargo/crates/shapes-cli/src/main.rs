fn main() {
    let side: u32 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2);
    println!("{}", shapes::square_area(side));
}

#[cfg(test)]
mod tests {
    #[test]
    fn uses_the_library() {
        assert_eq!(shapes::square_area(2), 4);
    }
}
