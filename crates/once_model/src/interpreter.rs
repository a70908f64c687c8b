//! What a Python interpreter setting names: a target's `python` attribute or the root
//! manifest's `[workspace] python`, read lexically (the file system is never consulted).
//!
//! The value is a path, relative to the workspace root or absolute. A last component
//! that is `python` or `pypy` followed by a version (`python3`, `python3.12`,
//! `python3.13t`, `pypy3`) names the interpreter file itself; any other path (and any
//! path written with a trailing `/`) names a directory, a virtual environment or an
//! installation prefix, whose `bin/python3` runs. The built-in Python kinds read the
//! value the same way (`prelude/python.star`, `_interpreter`); validation checks on
//! disk what it names (`once_graph::interpreters`).

/// The program of a directory setting, below the directory.
pub const DIRECTORY_PROGRAM: &str = "bin/python3";

/// A setting read.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PythonInterpreter {
    /// The path as named, normalised: workspace-relative (`""` the root itself) unless
    /// `absolute`; without a trailing `/`.
    pub path: String,
    pub absolute: bool,
    /// Whether `path` names a directory (its [`DIRECTORY_PROGRAM`] runs) rather than the
    /// interpreter file.
    pub directory: bool,
}

impl PythonInterpreter {
    /// The interpreter that runs: `path`, or its [`DIRECTORY_PROGRAM`] for a directory.
    pub fn program(&self) -> String {
        match (self.directory, self.path.as_str()) {
            (false, path) => path.to_owned(),
            (true, "") => DIRECTORY_PROGRAM.to_owned(),
            (true, "/") => format!("/{DIRECTORY_PROGRAM}"),
            (true, path) => format!("{path}/{DIRECTORY_PROGRAM}"),
        }
    }
}

/// Reads a setting; `Err` says what is wrong with it in words (`is empty`, …).
pub fn python_interpreter(value: &str) -> Result<PythonInterpreter, String> {
    if value.is_empty() {
        return Err("is empty".to_owned());
    }
    if value.contains('\0') || value.contains('\n') {
        return Err("holds a NUL or a line break".to_owned());
    }
    let trailing_slash = value.len() > 1 && value.ends_with('/');
    let absolute = value.starts_with('/');
    let path = if absolute {
        let mut parts: Vec<&str> = Vec::new();
        for part in value.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                part => parts.push(part),
            }
        }
        format!("/{}", parts.join("/"))
    } else {
        crate::paths::lexical_join("", value).ok_or_else(|| {
            "leaves the workspace (a relative path is relative to the workspace root; name a \
             place outside it by its absolute path)"
                .to_owned()
        })?
    };
    let last = path.rsplit('/').next().unwrap_or_default();
    Ok(PythonInterpreter {
        directory: trailing_slash || !names_interpreter(last),
        path,
        absolute,
    })
}

/// Whether a file name is an interpreter's: `python` or `pypy`, then digits and dots,
/// then at most one ASCII lowercase letter after a digit (`python3.13t`).
fn names_interpreter(name: &str) -> bool {
    let Some(version) = name
        .strip_prefix("python")
        .or_else(|| name.strip_prefix("pypy"))
    else {
        return false;
    };
    let (numbers, suffix) = match version.char_indices().last() {
        Some((at, c)) if c.is_ascii_lowercase() => (&version[..at], true),
        _ => (version, false),
    };
    numbers.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && (!suffix || numbers.ends_with(|c: char| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(value: &str) -> String {
        match python_interpreter(value) {
            Ok(found) => format!(
                "{} {} -> {}",
                if found.directory { "directory" } else { "file" },
                if found.absolute {
                    "absolute"
                } else {
                    "relative"
                },
                found.program()
            ),
            Err(why) => format!("error: {why}"),
        }
    }

    #[test]
    fn a_python_file_name_is_the_interpreter_and_anything_else_a_directory() {
        let cases = [
            ".venv",
            "./.venv/",
            "tools/../.venv",
            "/opt/venvs/app",
            ".venv/bin/python3",
            "/usr/bin/python3.11",
            "/usr/bin/python3.13t",
            "/usr/bin/python",
            "envs/pypy3",
            "envs/python3/",
            "envs/python-env",
            "envs/pythonic",
            "envs/python3.x",
            "envs/pythont",
            ".",
            "/",
            "",
            "../venv",
            "a/../../venv",
        ];
        let read: Vec<String> = cases
            .iter()
            .map(|case| format!("{case:?}: {}", read(case)))
            .collect();
        assert_eq!(
            read,
            [
                "\".venv\": directory relative -> .venv/bin/python3",
                "\"./.venv/\": directory relative -> .venv/bin/python3",
                "\"tools/../.venv\": directory relative -> .venv/bin/python3",
                "\"/opt/venvs/app\": directory absolute -> /opt/venvs/app/bin/python3",
                "\".venv/bin/python3\": file relative -> .venv/bin/python3",
                "\"/usr/bin/python3.11\": file absolute -> /usr/bin/python3.11",
                "\"/usr/bin/python3.13t\": file absolute -> /usr/bin/python3.13t",
                "\"/usr/bin/python\": file absolute -> /usr/bin/python",
                "\"envs/pypy3\": file relative -> envs/pypy3",
                "\"envs/python3/\": directory relative -> envs/python3/bin/python3",
                "\"envs/python-env\": directory relative -> envs/python-env/bin/python3",
                "\"envs/pythonic\": directory relative -> envs/pythonic/bin/python3",
                "\"envs/python3.x\": directory relative -> envs/python3.x/bin/python3",
                "\"envs/pythont\": directory relative -> envs/pythont/bin/python3",
                "\".\": directory relative -> bin/python3",
                "\"/\": directory absolute -> /bin/python3",
                "\"\": error: is empty",
                "\"../venv\": error: leaves the workspace (a relative path is relative to the workspace root; name a place outside it by its absolute path)",
                "\"a/../../venv\": error: leaves the workspace (a relative path is relative to the workspace root; name a place outside it by its absolute path)",
            ]
        );
    }
}
