//! Target labels: the canonical `package/name` id and the reference forms manifests use.
//!
//! A canonical id is the package path, a `/`, and the target name; targets of the root
//! package have just their name. Inside a manifest a reference may be root-relative
//! (`apps/cli/Cli`), or package-relative (`./Core`, `../lib/Core`). Bazel forms (`//a:b`,
//! `:b`) are rejected with the rewrite that would work.

use std::fmt;

/// A resolved target label.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TargetLabel {
    /// Workspace-relative package directory, `""` for the root package.
    pub package: String,
    pub name: String,
}

impl TargetLabel {
    pub fn new(package: impl Into<String>, name: impl Into<String>) -> TargetLabel {
        TargetLabel {
            package: package.into(),
            name: name.into(),
        }
    }

    /// The canonical id: `package/name`, or `name` in the root package.
    pub fn id(&self) -> String {
        if self.package.is_empty() {
            self.name.clone()
        } else {
            format!("{}/{}", self.package, self.name)
        }
    }

    /// Splits a canonical id at its last `/`.
    pub fn from_id(id: &str) -> TargetLabel {
        match id.rsplit_once('/') {
            Some((package, name)) => TargetLabel::new(package, name),
            None => TargetLabel::new("", id),
        }
    }
}

impl fmt::Display for TargetLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.package.is_empty() {
            write!(f, "{}/", self.package)?;
        }
        f.write_str(&self.name)
    }
}

/// Whether `name` is one path segment: not empty, not `.`/`..`, no `/`, `\`, `:`, or
/// whitespace, control and invisible characters ([`is_invisible`]).
pub fn is_valid_target_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && !name.chars().any(|c| {
            matches!(c, '/' | '\\' | ':') || c.is_whitespace() || c.is_control() || is_invisible(c)
        })
}

/// Characters that change how text around them is displayed without showing themselves:
/// the bidirectional controls (Unicode `Bidi_Control`: U+061C, U+200E, U+200F,
/// U+202A–U+202E, U+2066–U+2069), zero-width spaces and joiners, and every other format
/// character (general category `Cf`) or default-ignorable code point (soft hyphen,
/// variation selectors, Hangul fillers, tags, …). Two names that differ only by them look
/// the same, and a right-to-left override makes a name read as another.
pub fn is_invisible(c: char) -> bool {
    matches!(
        u32::from(c),
        0x00AD
            | 0x034F
            | 0x0600..=0x0605
            | 0x061C
            | 0x06DD
            | 0x070F
            | 0x0890..=0x0891
            | 0x08E2
            | 0x115F..=0x1160
            | 0x17B4..=0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x206F
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0xFFF0..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    )
}

/// `text` with every invisible character written as `\u{XXXX}`, for messages that quote it.
pub fn escape_invisible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_invisible(c) {
            out.push_str(&format!("\\u{{{:04X}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// The byte offset and character of the first invisible character of `name`.
pub fn first_invisible(name: &str) -> Option<(usize, char)> {
    name.char_indices().find(|&(_, c)| is_invisible(c))
}

/// Why a reference could not be resolved; `Display` is the user-facing message.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LabelError {
    Empty,
    /// A Bazel-style label, with the rewrite that `once` accepts.
    BazelSyntax {
        suggestion: String,
    },
    Absolute,
    EmptySegment,
    InvalidCharacter(char),
    EscapesRoot,
    InvalidName(String),
}

impl LabelError {
    /// The replacement text that would fix the reference, when one is known.
    pub fn suggestion(&self) -> Option<&str> {
        match self {
            LabelError::BazelSyntax { suggestion } => Some(suggestion),
            _ => None,
        }
    }
}

impl fmt::Display for LabelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabelError::Empty => f.write_str("the reference is empty"),
            LabelError::BazelSyntax { suggestion } => {
                write!(f, "uses Bazel label syntax; use `{suggestion}`")
            }
            LabelError::Absolute => f.write_str("must not start with `/`"),
            LabelError::EmptySegment => f.write_str("has an empty path segment"),
            LabelError::InvalidCharacter(c) => write!(f, "must not contain `{c}`"),
            LabelError::EscapesRoot => f.write_str("must not escape the workspace root"),
            LabelError::InvalidName(name) => {
                write!(f, "`{}` is not a valid target name", escape_invisible(name))
            }
        }
    }
}

/// Resolves a reference written in the manifest of `package` to a canonical label.
pub fn resolve_reference(package: &str, reference: &str) -> Result<TargetLabel, LabelError> {
    if reference.is_empty() {
        return Err(LabelError::Empty);
    }
    if let Some(rest) = reference.strip_prefix("//") {
        let suggestion = match rest.split_once(':') {
            Some(("", name)) => name.to_owned(),
            Some((pkg, name)) => format!("{pkg}/{name}"),
            None => {
                let last = rest.rsplit('/').next().unwrap_or(rest);
                if rest.is_empty() {
                    String::new()
                } else {
                    format!("{rest}/{last}")
                }
            }
        };
        return Err(LabelError::BazelSyntax { suggestion });
    }
    if let Some(name) = reference.strip_prefix(':') {
        let suggestion = format!("./{name}");
        return Err(LabelError::BazelSyntax { suggestion });
    }
    if reference.starts_with('/') {
        return Err(LabelError::Absolute);
    }
    if let Some(c) = reference
        .chars()
        .find(|c| matches!(c, ':' | '\\') || c.is_whitespace())
    {
        return Err(LabelError::InvalidCharacter(c));
    }
    let relative = reference.starts_with("./") || reference.starts_with("../");
    let mut segments: Vec<&str> = if relative && !package.is_empty() {
        package.split('/').collect()
    } else {
        Vec::new()
    };
    let parts: Vec<&str> = reference.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        match *part {
            "" => return Err(LabelError::EmptySegment),
            "." if i + 1 < parts.len() => {}
            ".." if i + 1 < parts.len() => {
                if segments.pop().is_none() {
                    return Err(LabelError::EscapesRoot);
                }
            }
            segment => segments.push(segment),
        }
    }
    let name = segments.pop().ok_or(LabelError::Empty)?;
    if !is_valid_target_name(name) {
        return Err(LabelError::InvalidName(name.to_owned()));
    }
    Ok(TargetLabel::new(segments.join("/"), name))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bidirectional controls, zero-width characters and other invisible format characters
    /// are not part of a valid name (a right-to-left override makes one name read as
    /// another); references naming such a target are refused too, with the character
    /// escaped in the message.
    #[test]
    fn invisible_characters_make_a_name_invalid() {
        for c in [
            '\u{202E}',
            '\u{2066}',
            '\u{200B}',
            '\u{200D}',
            '\u{FEFF}',
            '\u{00AD}',
            '\u{E0041}',
        ] {
            let name = format!("app{c}run");
            assert!(!is_valid_target_name(&name), "{c:?}");
            assert_eq!(first_invisible(&name), Some((3, c)));
            let error = resolve_reference("pkg", &format!("./{name}")).map(|l| l.id());
            assert_eq!(
                error.map_err(|e| e.to_string()),
                Err(format!(
                    "`app\\u{{{:04X}}}run` is not a valid target name",
                    u32::from(c)
                ))
            );
        }
        for name in ["Core", "café", "日本", "a-b_c.d", "😀"] {
            assert!(is_valid_target_name(name), "{name}");
        }
    }

    fn check(package: &str, reference: &str, expected: &str) {
        let actual = match resolve_reference(package, reference) {
            Ok(label) => label.id(),
            Err(err) => format!("error: {err}"),
        };
        assert_eq!(actual, expected, "resolving `{reference}` in `{package}`");
    }

    #[test]
    fn root_relative_references() {
        check("apps/cli", "libs/core/Core", "libs/core/Core");
        check("", "Core", "Core");
        check("apps", "Core", "Core");
    }

    #[test]
    fn package_relative_references() {
        check("apps/cli", "./Cli", "apps/cli/Cli");
        check("apps/cli", "../lib/Lib", "apps/lib/Lib");
        check("apps/cli", "../../Root", "Root");
        check(
            "apps",
            "../../X",
            "error: must not escape the workspace root",
        );
        check("", "./Root", "Root");
    }

    #[test]
    fn bazel_forms_are_rejected_with_a_rewrite() {
        check(
            "apps",
            "//libs/core:Core",
            "error: uses Bazel label syntax; use `libs/core/Core`",
        );
        check(
            "apps",
            ":Core",
            "error: uses Bazel label syntax; use `./Core`",
        );
        check(
            "apps",
            "//:Root",
            "error: uses Bazel label syntax; use `Root`",
        );
    }

    #[test]
    fn malformed_references() {
        check("", "", "error: the reference is empty");
        check("", "/abs/X", "error: must not start with `/`");
        check("", "a//X", "error: has an empty path segment");
        check("", "a\\X", "error: must not contain `\\`");
        check("", "a/..", "error: `..` is not a valid target name");
    }

    #[test]
    fn target_names() {
        assert!(is_valid_target_name("Core-2_x.y"));
        for bad in ["", ".", "..", "a/b", "a:b", "a b", "a\\b"] {
            assert!(!is_valid_target_name(bad), "{bad:?}");
        }
    }
}
