//! Seeded random mutations of seed inputs, for running the targets on stable without
//! libFuzzer (`tests/corpus.rs`): the same seed gives the same inputs, so a failure
//! replays from the seed it prints.
//!
//! Each mutation applies one to four edits to a seed: flip a bit, set a byte to an
//! interesting value, insert a token that matters to one of the parsers (quotes,
//! brackets, line ends, a `Content-Length` header, a lone surrogate escape, invalid
//! UTF-8, a long number), delete or duplicate a range, splice in part of another seed,
//! or truncate.

/// A small deterministic PRNG (SplitMix64).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`0` when `bound` is `0`).
    pub fn below(&mut self, bound: usize) -> usize {
        if bound == 0 {
            return 0;
        }
        (self.next_u64() % bound as u64) as usize
    }
}

/// Tokens that mean something to one of the parsers.
const TOKENS: &[&[u8]] = &[
    b"\n",
    b"\r\n",
    b"\r",
    b"\"",
    b"'",
    b"\"\"\"",
    b"\\",
    b"\\u",
    b"\\ud83d",
    b"\\udc00",
    b"[",
    b"]",
    b"[[",
    b"]]",
    b"{",
    b"}",
    b"=",
    b",",
    b".",
    b":",
    b"#",
    b"# once ",
    b"#!",
    b"..",
    b"/",
    b"<",
    b">",
    b"</",
    b"&",
    b"&#0;",
    b"<![CDATA[",
    b"-->",
    b"\0",
    b"\xef\xbb\xbf",
    b"\xff",
    b"\xc3",
    b"\xe2\x80\xa8",
    b"Content-Length: ",
    b"Content-Length: 99999999999\r\n\r\n",
    b"\r\n\r\n",
    b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"",
    b"null",
    b"true",
    b"-0",
    b"1e999",
    b"18446744073709551616",
    b"9223372036854775808",
    b"-9223372036854775809",
    b"nan",
    b"inf",
    b"1979-05-27T07:32:00Z",
    b"ok ",
    b"not ok ",
    b"1..",
    b"# SKIP",
    b"# TODO",
    b"test result: ",
    b" ... ok",
    b" ... FAILED",
    b"---- ",
    b"\"Action\":\"",
    b"()",
    b"def ",
    b"lambda",
    b"*",
    b"**",
    b"%",
    b"load(",
    b"target_kind(",
    b"range(",
    b"    ",
    b"\t",
];

/// Interesting byte values for a byte set in place.
const BYTES: &[u8] = &[0, 1, 0x7f, 0x80, 0xff, b'0', b'9', b' ', b'\n', b'"', b'\\'];

/// One mutation of `seeds[index]`; `seeds` also supplies the splices.
pub fn mutate(seeds: &[Vec<u8>], index: usize, rng: &mut Rng) -> Vec<u8> {
    let mut data = seeds.get(index).cloned().unwrap_or_default();
    let edits = 1 + rng.below(4);
    for _ in 0..edits {
        let len = data.len();
        match rng.below(9) {
            0 if len > 0 => {
                let at = rng.below(len);
                data[at] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let at = rng.below(len);
                data[at] = BYTES[rng.below(BYTES.len())];
            }
            2 | 3 => {
                let at = rng.below(len + 1);
                let token = TOKENS[rng.below(TOKENS.len())];
                data.splice(at..at, token.iter().copied());
            }
            4 if len > 0 => {
                let at = rng.below(len);
                let end = (at + 1 + rng.below(16)).min(len);
                data.drain(at..end);
            }
            5 if len > 0 => {
                let at = rng.below(len);
                let end = (at + 1 + rng.below(64)).min(len);
                let copy: Vec<u8> = data[at..end].to_vec();
                let to = rng.below(len + 1);
                data.splice(to..to, copy);
            }
            6 if !seeds.is_empty() => {
                let other = &seeds[rng.below(seeds.len())];
                if !other.is_empty() {
                    let from = rng.below(other.len());
                    let end = (from + 1 + rng.below(256)).min(other.len());
                    let at = rng.below(len + 1);
                    data.splice(at..at, other[from..end].iter().copied());
                }
            }
            7 if len > 0 => data.truncate(rng.below(len)),
            _ => {
                let at = rng.below(len + 1);
                let digits = rng.next_u64().to_string();
                data.splice(at..at, digits.bytes());
            }
        }
    }
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_mutations() {
        let seeds = vec![b"name = \"x\"\n".to_vec(), b"ok 1\n".to_vec()];
        let run = |seed| {
            let mut rng = Rng::new(seed);
            (0..50)
                .map(|i| mutate(&seeds, i % 2, &mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        assert!(run(7).iter().any(|m| !seeds.contains(m)));
    }
}
