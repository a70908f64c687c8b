//! Property tests: on any input `parse` and `document` return normally, the
//! tree reproduces the text, and every error range lies inside the text on
//! character boundaries.

use proptest::prelude::*;

fn check_robust(text: &str) -> Result<(), TestCaseError> {
    let parse = once_syntax::parse(text);
    prop_assert_eq!(parse.syntax().to_string(), text);
    let document = once_syntax::value::document(&parse);
    for error in parse.errors().iter().chain(&document.errors) {
        let start = usize::from(error.range.start());
        let end = usize::from(error.range.end());
        prop_assert!(end <= text.len(), "{error:?} outside {} bytes", text.len());
        prop_assert!(
            text.is_char_boundary(start) && text.is_char_boundary(end),
            "{error:?} splits a character"
        );
        prop_assert!(!error.message.is_empty());
    }
    let starts: Vec<_> = document
        .errors
        .iter()
        .map(|error| error.range.start())
        .collect();
    prop_assert!(starts.is_sorted(), "document errors are not sorted");
    Ok(())
}

/// Pieces of TOML, valid and not, that combine into tricky documents.
const PIECES: &[&str] = &[
    "[",
    "]",
    "[[",
    "]]",
    "{",
    "}",
    "=",
    ",",
    ".",
    "\n",
    "\r\n",
    "\r",
    " ",
    "\t",
    "#",
    "# c\n",
    "\"",
    "'",
    "\"\"\"",
    "'''",
    "\\",
    "\\u",
    "\\U0001F600",
    "\\x4",
    "\\e",
    "a",
    "key",
    "b.c",
    "\"q\"",
    "'l'",
    "1",
    "-0",
    "0x1F",
    "0o7",
    "0b1",
    "1_000",
    "1.5",
    "1e10",
    "e",
    "_",
    "-",
    "+",
    "inf",
    "nan",
    "true",
    "false",
    "1979-05-27",
    "T",
    " 07:32:00",
    "07:32",
    ":",
    "Z",
    "+01:00",
    ".123",
    "é",
    "😀",
    "\u{feff}",
    "\0",
    "\u{7f}",
    "9223372036854775808",
    "[a]\n",
    "[[t]]\n",
    "x = 1\n",
    "y = [1,\n2]\n",
    "z = { a = 1 }\n",
];

fn tomlish() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..40).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_strings(text in any::<String>()) {
        check_robust(&text)?;
    }

    #[test]
    fn arbitrary_printable_lines(text in "[ -~\n\t]{0,80}") {
        check_robust(&text)?;
    }

    #[test]
    fn toml_like_documents(text in tomlish()) {
        check_robust(&text)?;
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let deep_array = format!("a = {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
    let deep_inline = format!("a = {}{}\n", "{b=".repeat(50_000), "}".repeat(50_000));
    let long_key = format!(
        "{} = 1\n[{}]\n",
        vec!["k"; 100_000].join("."),
        vec!["h"; 100_000].join(".")
    );
    // The worst case within the limits: maximal keys at every nesting level.
    let key = vec!["k"; 64].join(".");
    let worst = format!(
        "a = {}1{}\n",
        format!("{{ {key} = ").repeat(63),
        " }".repeat(63)
    );
    for text in [deep_array, deep_inline, long_key] {
        let document = once_syntax::value::document(&once_syntax::parse(&text));
        assert!(!document.errors.is_empty());
    }
    let document = once_syntax::value::document(&once_syntax::parse(&worst));
    assert_eq!(document.errors, Vec::new());
}
