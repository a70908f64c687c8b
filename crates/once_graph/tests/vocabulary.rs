//! The manifest reader and the manifest vocabulary (`once_model::vocabulary`) agree: every
//! key the vocabulary lists is read (a value of the wrong type is a type error, never an
//! unknown key), and a key it does not list is unknown in every table.

use once_graph::read_manifest_text;
use once_model::{DiagnosticCode, KeyShape, MANIFEST_KEYS, ManifestKey, ManifestTable};

/// Root manifest text writing `value` for `key` in its table.
fn manifest_with(key: &ManifestKey, value: &str) -> String {
    let header = match key.table {
        ManifestTable::TopLevel => String::new(),
        ManifestTable::Target => "[[target]]\n".to_owned(),
        table => format!("[{}]\n", table.path().join(".")),
    };
    format!("{header}{} = {value}\n", key.name)
}

/// A value of the key's shape.
fn value_of(shape: KeyShape) -> &'static str {
    match shape {
        KeyShape::String => "\"x\"",
        KeyShape::Boolean => "true",
        KeyShape::Integer(..) => "2",
        KeyShape::Strings => "[\"x\"]",
        KeyShape::Labels => "[\"./x\"]",
        KeyShape::Roles => "{ tools = [\"./x\"] }",
        KeyShape::Attrs => "{ a = 1 }",
        KeyShape::Table => "{}",
        KeyShape::Tables => "[{ name = \"x\", kind = \"k\" }]",
    }
}

fn codes(text: &str) -> Vec<(DiagnosticCode, Option<String>)> {
    read_manifest_text("once.toml", "", text)
        .diagnostics
        .into_iter()
        .map(|d| (d.code, d.attribute))
        .collect()
}

#[test]
fn every_vocabulary_key_is_read() {
    for key in MANIFEST_KEYS {
        let text = manifest_with(key, value_of(key.shape));
        let found = codes(&text);
        assert!(
            !found.iter().any(|(c, _)| *c == DiagnosticCode::UnknownKey),
            "{text}{found:?}"
        );
        let wrong = match key.shape {
            KeyShape::Integer(_, maximum) => format!("{}", maximum + 1),
            _ => "1".to_owned(),
        };
        let text = manifest_with(key, &wrong);
        let found = codes(&text);
        assert!(
            found
                .iter()
                .any(|(c, attribute)| *c == DiagnosticCode::InvalidFieldType
                    && attribute.as_deref() == Some(key.name)),
            "a wrong value of `{}` is not read as one:\n{text}{found:?}",
            key.name
        );
    }
}

#[test]
fn keys_the_vocabulary_lacks_are_unknown_everywhere() {
    for table in ManifestTable::ALL {
        let Some(known) = table.keys().next() else {
            continue;
        };
        let unknown = ManifestKey {
            name: "not_a_key",
            ..*known
        };
        let text = manifest_with(&unknown, "1");
        assert_eq!(
            codes(&text),
            [(DiagnosticCode::UnknownKey, Some("not_a_key".to_owned()))],
            "{text}"
        );
    }
}
