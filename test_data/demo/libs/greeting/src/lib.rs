//! Greetings for one or more people.

/// Greets everyone in `names`, or the world when nobody is named.
pub fn greet(names: &[&str]) -> String {
    let who = if names.is_empty() {
        "World".to_owned()
    } else {
        let capitalized: Vec<String> = names.iter().map(|n| text::capitalize(n)).collect();
        let borrowed: Vec<&str> = capitalized.iter().map(String::as_str).collect();
        text::join_names(&borrowed)
    };
    format!("Hello, {who}{}", ending())
}

#[cfg(feature = "punctuation")]
fn ending() -> &'static str {
    "!"
}

#[cfg(not(feature = "punctuation"))]
fn ending() -> &'static str {
    ""
}

#[cfg(test)]
mod tests {
    #[test]
    fn greets_the_world_by_default() {
        assert_eq!(super::greet(&[]), "Hello, World!");
    }
}
