//! Differential tests against the `toml` crate: on hand-picked edge cases of
//! TOML's definition rules and on generated documents, we accept exactly what
//! it accepts and read the same values.

mod common;

use proptest::prelude::*;

/// `Err` describing the disagreement, if any.
fn agree_with_toml_crate(text: &str) -> Result<(), String> {
    let document = once_syntax::value::document(&once_syntax::parse(text));
    match toml::from_str::<toml::Table>(text) {
        Ok(oracle) => {
            if let Some(error) = document.errors.first() {
                return Err(format!(
                    "{text:?}: the toml crate accepts it, we report {error}"
                ));
            }
            let mut differences = Vec::new();
            common::compare(
                &common::toml_table_to_json(&oracle),
                &common::table_to_json(&document.root),
                "$",
                &mut differences,
            );
            if differences.is_empty() {
                Ok(())
            } else {
                Err(format!("{text:?}: {}", differences.join("; ")))
            }
        }
        Err(error) if document.errors.is_empty() => Err(format!(
            "{text:?}: we accept it, the toml crate reports {error}"
        )),
        Err(_) => Ok(()),
    }
}

#[test]
fn edge_cases_agree_with_toml_crate() {
    let cases = [
        "[a.b.c]\n[a]\nb.d = 1\n[a.b]\n",
        "[a.b.c]\n[a]\nb.d = 1\n[a.b.e]\n",
        "[a.b.c]\n[a]\nb.d = 1\nb.e = 2\n",
        "[a.b.c]\n[a]\nb = 1\n",
        "[a.b.c]\n[a]\nb.c.x = 1\n",
        "[a.b]\n[a]\nb = {}\n",
        "x = 1e308\n",
        "x = 1e-400\n",
    ];
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| agree_with_toml_crate(case).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Pieces that combine into documents exercising tables, dotted keys and values.
const PIECES: &[&str] = &[
    "[",
    "]",
    "[[",
    "]]",
    "{",
    "}",
    " = ",
    ",",
    ".",
    "\n",
    " ",
    "#c\n",
    "\"s\"",
    "'l'",
    "\"\"\"m\"\"\"",
    "a",
    "b",
    "1",
    "1.5",
    "true",
    "1979-05-27",
    "07:32",
    "x = 1\n",
    "[a]\n",
    "[[a]]\n",
    "[a.b]\n",
    "a.b = 2\n",
    "b = { c = 1 }\n",
    "= [1,\n2]\n",
    "\"\\q\"",
    "\"\\e\"",
    "0x1",
    "inf",
    "-",
    "_",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn generated_documents_agree_with_toml_crate(pieces in prop::collection::vec(prop::sample::select(PIECES), 0..12)) {
        let text = pieces.concat();
        if let Err(message) = agree_with_toml_crate(&text) {
            return Err(TestCaseError::fail(message));
        }
    }
}
