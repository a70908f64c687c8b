//! Small string helpers.

/// Upper-cases the first character of `word` and leaves the rest alone.
pub fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Joins names as English prose: `a`, `a and b`, `a, b and c`.
pub fn join_names(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capitalizes_the_first_letter() {
        assert_eq!(capitalize("world"), "World");
        assert_eq!(capitalize(""), "");
    }

    #[test]
    fn joins_names_as_prose() {
        assert_eq!(join_names(&["ann"]), "ann");
        assert_eq!(join_names(&["ann", "bo", "cy"]), "ann, bo and cy");
    }
}
