//! Decoding of scalar tokens: strings (with escapes), integers, floats and
//! date-times. Each decoder checks the exact TOML 1.1 grammar the lexer only
//! approximated and reports what is wrong with a range inside the token.

use rowan::{TextRange, TextSize};

use super::{Datetime, DatetimeKind};
use crate::SyntaxError;
use crate::SyntaxKind::{self, *};

/// Decodes a string token of any of the four kinds, reporting bad escapes.
/// The result is still usable when there are errors: bad escapes are kept
/// as written.
pub(crate) fn decode_string(
    kind: SyntaxKind,
    text: &str,
    start: TextSize,
    errors: &mut Vec<SyntaxError>,
) -> String {
    let (delimiter, multi_line) = match kind {
        BASIC_STRING => ("\"", false),
        LITERAL_STRING => ("'", false),
        MULTI_LINE_BASIC_STRING => ("\"\"\"", true),
        _ => ("'''", true),
    };
    let body = text.strip_prefix(delimiter).unwrap_or(text);
    let mut content_offset = text.len() - body.len();
    let body = if body.len() >= delimiter.len() {
        body.strip_suffix(delimiter).unwrap_or(body)
    } else {
        body
    };
    let body = if multi_line {
        // A line end right after the opening delimiter is trimmed.
        let trimmed = body
            .strip_prefix('\n')
            .or_else(|| body.strip_prefix("\r\n"))
            .unwrap_or(body);
        content_offset += body.len() - trimmed.len();
        trimmed
    } else {
        body
    };
    let content_start = start + offset_size(content_offset);
    if matches!(kind, BASIC_STRING | MULTI_LINE_BASIC_STRING) {
        unescape(body, content_start, multi_line, errors)
    } else {
        body.to_string()
    }
}

fn offset_size(offset: usize) -> TextSize {
    TextSize::try_from(offset).unwrap_or_default()
}

fn unescape(
    body: &str,
    content_start: TextSize,
    multi_line: bool,
    errors: &mut Vec<SyntaxError>,
) -> String {
    let mut out = String::with_capacity(body.len());
    let mut index = 0;
    while let Some(rest) = body.get(index..) {
        let Some(backslash) = rest.find('\\') else {
            out.push_str(rest);
            break;
        };
        out.push_str(rest.get(..backslash).unwrap_or_default());
        let escape_start = index + backslash;
        let after = body.get(escape_start + 1..).unwrap_or_default();
        let mut chars = after.chars();
        let escape_len = match chars.next() {
            Some(c @ ('b' | 't' | 'n' | 'f' | 'r' | '"' | '\\' | 'e')) => {
                out.push(match c {
                    'b' => '\u{8}',
                    't' => '\t',
                    'n' => '\n',
                    'f' => '\u{c}',
                    'r' => '\r',
                    'e' => '\u{1b}',
                    other => other,
                });
                2
            }
            Some(c @ ('x' | 'u' | 'U')) => {
                let digits = match c {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let hex = after
                    .get(1..1 + digits)
                    .filter(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()));
                match hex.and_then(|hex| u32::from_str_radix(hex, 16).ok()) {
                    Some(code) => {
                        match char::from_u32(code) {
                            Some(decoded) => out.push(decoded),
                            None => {
                                let range = escape_range(content_start, escape_start, 2 + digits);
                                errors.push(SyntaxError {
                                message: format!("escape `\\{c}{code:0digits$X}` is not a Unicode scalar value"),
                                range,
                            });
                            }
                        }
                    }
                    None => {
                        let len = 2 + after.get(1..).map_or(0, |rest| {
                            rest.char_indices()
                                .take_while(|&(offset, c)| offset < digits && c.is_ascii_hexdigit())
                                .count()
                        });
                        errors.push(SyntaxError {
                            message: format!("escape `\\{c}` needs {digits} hexadecimal digits"),
                            range: escape_range(content_start, escape_start, len),
                        });
                        out.push('\\');
                        out.push(c);
                        return finish_after_bad_escape(
                            out,
                            body,
                            escape_start + 2,
                            content_start,
                            multi_line,
                            errors,
                        );
                    }
                }
                2 + digits
            }
            Some(' ' | '\t' | '\n' | '\r') if multi_line => {
                // Line-ending backslash: only whitespace may follow it on its line.
                let blank = after.len() - after.trim_start_matches([' ', '\t']).len();
                let after_blank = after.get(blank..).unwrap_or_default();
                if after_blank.starts_with('\n') || after_blank.starts_with("\r\n") {
                    let skipped =
                        after.len() - after.trim_start_matches([' ', '\t', '\n', '\r']).len();
                    1 + skipped
                } else {
                    errors.push(SyntaxError {
                        message: "a line-ending backslash may only be followed by whitespace and a line end".to_string(),
                        range: escape_range(content_start, escape_start, 1 + blank),
                    });
                    out.push('\\');
                    1
                }
            }
            other => {
                let len = 1 + other.map_or(0, char::len_utf8);
                let message = match other {
                    Some(c) if !c.is_control() => format!("invalid escape sequence `\\{c}`"),
                    _ => "invalid escape sequence".to_string(),
                };
                errors.push(SyntaxError {
                    message,
                    range: escape_range(content_start, escape_start, len),
                });
                out.push('\\');
                1
            }
        };
        index = escape_start + escape_len;
    }
    out
}

/// Continues unescaping after a malformed `\x`/`\u`/`\U` escape.
fn finish_after_bad_escape(
    mut out: String,
    body: &str,
    resume: usize,
    content_start: TextSize,
    multi_line: bool,
    errors: &mut Vec<SyntaxError>,
) -> String {
    let rest = body.get(resume..).unwrap_or_default();
    out.push_str(&unescape(
        rest,
        content_start + offset_size(resume),
        multi_line,
        errors,
    ));
    out
}

fn escape_range(content_start: TextSize, offset: usize, len: usize) -> TextRange {
    let start = content_start + offset_size(offset);
    TextRange::at(start, offset_size(len))
}

/// `true` when `text` is one or more characters matching `is_digit`, with
/// single underscores only between them.
fn is_digits_with_underscores(text: &str, is_digit: impl Fn(u8) -> bool) -> bool {
    let bytes = text.as_bytes();
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    is_digit(first)
        && is_digit(last)
        && bytes.iter().all(|&b| b == b'_' || is_digit(b))
        && !text.contains("__")
}

/// Decodes an `INTEGER` token: decimal with optional sign, or unsigned
/// `0x`/`0o`/`0b`.
pub(crate) fn decode_integer(text: &str) -> Result<i64, String> {
    let (negative, unsigned) = match text.as_bytes().first() {
        Some(b'-') => (true, text.get(1..).unwrap_or_default()),
        Some(b'+') => (false, text.get(1..).unwrap_or_default()),
        _ => (false, text),
    };
    let signed = unsigned.len() != text.len();
    let radix_digits = [
        ("0x", 16, "hexadecimal"),
        ("0o", 8, "octal"),
        ("0b", 2, "binary"),
    ]
    .into_iter()
    .find_map(|(prefix, radix, name)| {
        unsigned
            .strip_prefix(prefix)
            .map(|digits| (digits, radix, name))
    });
    let (digits, radix) = match radix_digits {
        Some((digits, radix, name)) => {
            if signed {
                return Err(format!("{name} integers cannot have a sign"));
            }
            if !is_digits_with_underscores(digits, |b| char::from(b).is_digit(radix)) {
                return Err(format!("invalid {name} integer `{text}`"));
            }
            (digits, radix)
        }
        None => {
            if !is_digits_with_underscores(unsigned, |b| b.is_ascii_digit()) {
                return Err(format!("invalid integer `{text}`"));
            }
            if unsigned.len() > 1 && unsigned.starts_with('0') {
                return Err(format!("leading zeros are not allowed in `{text}`"));
            }
            (unsigned, 10)
        }
    };
    let cleaned: String = digits.chars().filter(|&c| c != '_').collect();
    let magnitude = u64::from_str_radix(&cleaned, radix)
        .map_err(|_| format!("integer `{text}` does not fit in 64 bits"))?;
    let value = if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    };
    value.ok_or_else(|| format!("integer `{text}` does not fit in 64 bits"))
}

/// Decodes a `FLOAT` token: decimal with fraction and/or exponent, `inf`, `nan`.
pub(crate) fn decode_float(text: &str) -> Result<f64, String> {
    let (negative, unsigned) = match text.as_bytes().first() {
        Some(b'-') => (true, text.get(1..).unwrap_or_default()),
        Some(b'+') => (false, text.get(1..).unwrap_or_default()),
        _ => (false, text),
    };
    let sign = if negative { -1.0 } else { 1.0 };
    match unsigned {
        "inf" => return Ok(sign * f64::INFINITY),
        "nan" => return Ok(if negative { -f64::NAN } else { f64::NAN }),
        _ => {}
    }
    let invalid = || format!("invalid float `{text}`");
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (
            unsigned.get(..at).unwrap_or_default(),
            Some(unsigned.get(at + 1..).unwrap_or_default()),
        ),
        None => (unsigned, None),
    };
    let (integer_part, fraction) = match mantissa.split_once('.') {
        Some((integer_part, fraction)) => (integer_part, Some(fraction)),
        None => (mantissa, None),
    };
    let decimal = |part: &str| is_digits_with_underscores(part, |b| b.is_ascii_digit());
    if !decimal(integer_part) {
        return Err(invalid());
    }
    if integer_part.len() > 1 && integer_part.starts_with('0') {
        return Err(format!("leading zeros are not allowed in `{text}`"));
    }
    if fraction.is_some_and(|fraction| !decimal(fraction)) {
        return Err(invalid());
    }
    if let Some(exponent) = exponent {
        let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
        if !decimal(digits) {
            return Err(invalid());
        }
    }
    if fraction.is_none() && exponent.is_none() {
        return Err(invalid());
    }
    let cleaned: String = text.chars().filter(|&c| c != '_').collect();
    match cleaned.parse::<f64>() {
        Ok(float) if float.is_infinite() => Err(format!("float `{text}` is out of range")),
        Ok(float) => Ok(float),
        Err(_) => Err(invalid()),
    }
}

/// The parts of a date-time, as read from its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DatetimeParts<'a> {
    pub(crate) date: Option<(u16, u8, u8)>,
    /// Hour, minute, second (0 when omitted) and the fraction digits as written.
    pub(crate) time: Option<(u8, u8, u8, &'a str)>,
    /// `None` for local values; `Some(None)` for `Z`; minutes east of UTC otherwise.
    pub(crate) offset: Option<Option<i16>>,
}

/// Decodes a `DATETIME` token into its kind, checking every field's range.
pub(crate) fn decode_datetime(text: &str) -> Result<Datetime, String> {
    let parts = datetime_parts(text)?;
    let kind = match (parts.date, parts.time, parts.offset) {
        (Some(_), Some(_), Some(_)) => DatetimeKind::OffsetDateTime,
        (Some(_), Some(_), None) => DatetimeKind::LocalDateTime,
        (Some(_), None, None) => DatetimeKind::LocalDate,
        (None, Some(_), None) => DatetimeKind::LocalTime,
        _ => return Err(format!("invalid date-time `{text}`")),
    };
    Ok(Datetime {
        kind,
        text: text.to_string(),
    })
}

pub(crate) fn datetime_parts(text: &str) -> Result<DatetimeParts<'_>, String> {
    let invalid = || format!("invalid date-time `{text}`");
    let mut cursor = Cursor { rest: text };
    let mut parts = DatetimeParts {
        date: None,
        time: None,
        offset: None,
    };
    let starts_with_date = text.as_bytes().get(4) == Some(&b'-');
    if starts_with_date {
        let year = cursor.number(4).ok_or_else(invalid)?;
        cursor.eat(b'-').ok_or_else(invalid)?;
        let month = cursor.number(2).ok_or_else(invalid)?;
        cursor.eat(b'-').ok_or_else(invalid)?;
        let day = cursor.number(2).ok_or_else(invalid)?;
        if !(1..=12).contains(&month) {
            return Err(format!("month {month} is out of range in `{text}`"));
        }
        if day == 0 || day > days_in_month(year, month) {
            return Err(format!("day {day} is out of range in `{text}`"));
        }
        parts.date = Some((year as u16, month as u8, day as u8));
        if cursor.rest.is_empty() {
            return Ok(parts);
        }
        if !matches!(cursor.rest.as_bytes().first(), Some(b'T' | b't' | b' ')) {
            return Err(invalid());
        }
        cursor.rest = cursor.rest.get(1..).unwrap_or_default();
    }
    let hour = cursor.number(2).ok_or_else(invalid)?;
    cursor.eat(b':').ok_or_else(invalid)?;
    let minute = cursor.number(2).ok_or_else(invalid)?;
    let mut second = 0;
    let mut fraction = "";
    if cursor.eat(b':').is_some() {
        second = cursor.number(2).ok_or_else(invalid)?;
        if cursor.eat(b'.').is_some() {
            let len = cursor.rest.bytes().take_while(u8::is_ascii_digit).count();
            if len == 0 {
                return Err(invalid());
            }
            fraction = cursor.rest.get(..len).unwrap_or_default();
            cursor.rest = cursor.rest.get(len..).unwrap_or_default();
        }
    }
    if hour > 23 {
        return Err(format!("hour {hour} is out of range in `{text}`"));
    }
    if minute > 59 {
        return Err(format!("minute {minute} is out of range in `{text}`"));
    }
    if second > 60 {
        return Err(format!("second {second} is out of range in `{text}`"));
    }
    parts.time = Some((hour as u8, minute as u8, second as u8, fraction));
    if parts.date.is_some() {
        match cursor.rest.as_bytes().first() {
            Some(b'Z' | b'z') => {
                cursor.rest = cursor.rest.get(1..).unwrap_or_default();
                parts.offset = Some(None);
            }
            Some(&sign @ (b'+' | b'-')) => {
                cursor.rest = cursor.rest.get(1..).unwrap_or_default();
                let offset_hour = cursor.number(2).ok_or_else(invalid)?;
                cursor.eat(b':').ok_or_else(invalid)?;
                let offset_minute = cursor.number(2).ok_or_else(invalid)?;
                if offset_hour > 23 || offset_minute > 59 {
                    return Err(format!("time zone offset is out of range in `{text}`"));
                }
                let minutes = (offset_hour * 60 + offset_minute) as i16;
                parts.offset = Some(Some(if sign == b'-' { -minutes } else { minutes }));
            }
            _ => {}
        }
    }
    if !cursor.rest.is_empty() {
        return Err(invalid());
    }
    Ok(parts)
}

struct Cursor<'a> {
    rest: &'a str,
}

impl Cursor<'_> {
    /// Exactly `digits` ASCII digits.
    fn number(&mut self, digits: usize) -> Option<u32> {
        let part = self.rest.get(..digits)?;
        if !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        self.rest = self.rest.get(digits..)?;
        part.parse().ok()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        if self.rest.as_bytes().first() == Some(&byte) {
            self.rest = self.rest.get(1..)?;
            Some(())
        } else {
            None
        }
    }
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        assert_eq!(decode_integer("1_000"), Ok(1000));
        assert_eq!(decode_integer("-9223372036854775808"), Ok(i64::MIN));
        assert!(decode_integer("9223372036854775808").is_err());
        assert_eq!(decode_integer("0xDEAD_beef"), Ok(0xdead_beef));
        assert!(decode_integer("+0x1").is_err());
        assert!(decode_integer("012").is_err());
        assert!(decode_integer("1__2").is_err());
        assert!(decode_integer("0x").is_err());
    }

    #[test]
    fn floats() {
        assert_eq!(decode_float("6.626e-34"), Ok(6.626e-34));
        assert_eq!(decode_float("-inf"), Ok(f64::NEG_INFINITY));
        assert!(decode_float("nan").is_ok_and(f64::is_nan));
        assert!(decode_float("1.").is_err());
        assert!(decode_float(".1").is_err());
        assert!(decode_float("01.5").is_err());
        assert!(decode_float("1e_5").is_err());
    }

    #[test]
    fn datetimes() {
        assert!(decode_datetime("2024-02-29").is_ok());
        assert!(decode_datetime("2023-02-29").is_err());
        assert!(decode_datetime("24:00:00").is_err());
        assert_eq!(
            decode_datetime("07:32").map(|d| d.kind),
            Ok(DatetimeKind::LocalTime)
        );
        assert_eq!(
            decode_datetime("1979-05-27 07:32Z").map(|d| d.kind),
            Ok(DatetimeKind::OffsetDateTime)
        );
        assert!(decode_datetime("07:32Z").is_err());
    }

    #[test]
    fn escapes() {
        let mut errors = Vec::new();
        let decoded = decode_string(
            BASIC_STRING,
            r#""a\tb\x41\u00e9\e""#,
            TextSize::new(0),
            &mut errors,
        );
        assert_eq!(decoded, "a\tbAé\u{1b}");
        assert!(errors.is_empty());
        decode_string(BASIC_STRING, r#""\q\uD800""#, TextSize::new(0), &mut errors);
        assert_eq!(errors.len(), 2);
    }
}
