//! `calculator`: arithmetic, and nothing else.
//!
//! strands-cli's calculator parses the expression as Python and evaluates
//! only numbers and the operators `+ - * / // % **` (unary `+` and `-`
//! too); names, calls, strings, comparisons and bitwise operators are
//! refused. This is the same language with Python's meaning: `/` always
//! gives a float, `//` floors, `%` takes the divisor's sign, `**` binds
//! tighter than a unary minus on its left and is right-associative, and an
//! integer power of an integer stays an integer. Whole floats are shown as
//! integers (`10 / 2 = 5`), other floats as Python prints them.
//!
//! Written here rather than taken from an expression crate: `evalexpr`,
//! `meval` and `fasteval` read `^` as power, have no `//`, and bring
//! variables, functions or assignment that a model should not reach. The
//! parser is small, never evaluates anything but arithmetic, and bounds
//! the input's length and nesting. Integers are 128-bit; a result beyond
//! that is an error (Python would go on with big integers).

use serde_json::{json, Value};

use super::str_arg;
use super::text::short;
use crate::tools::ToolResult;

/// Longest expression accepted, in bytes.
const MAX_LEN: usize = 10_000;
/// Deepest nesting of parentheses and unary operators.
const MAX_DEPTH: usize = 200;

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Perform basic mathematical calculations (addition, subtraction, multiplication, \
         division, floor division //, modulo %, exponentiation **). Numbers and operators only.",
        json!({
            "type": "object",
            "properties": {
                "expression": {
                    "type": "string",
                    "description": "Mathematical expression to evaluate (e.g., '2 + 2', '10 * 5 - 3', '2 ** 10')"
                }
            },
            "required": ["expression"],
            "additionalProperties": false
        }),
    )
}

pub(super) fn describe(args: &Value) -> String {
    format!(
        "calculate {}",
        short(str_arg(args, "expression").unwrap_or("?"))
    )
}

pub(super) fn run(args: &Value) -> ToolResult {
    let expression = str_arg(args, "expression").unwrap_or_default().trim();
    if expression.is_empty() {
        return ToolResult::error("Error: 'expression' parameter is required");
    }
    match evaluate(expression) {
        Ok(n) => ToolResult::ok(format!("{expression} = {}", n.shown())),
        Err(e) => ToolResult::error(e.to_string()),
    }
}

/// Why an expression has no value, worded as strands-cli words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CalcError {
    #[error("Syntax error in expression: {0}")]
    Syntax(String),
    #[error("Error: Division by zero")]
    DivisionByZero,
    #[error("Error: {0}")]
    Unsupported(String),
    #[error("Error evaluating expression: {0}")]
    Range(String),
}

/// A number as Python has it: an integer or a float.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    fn float(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    /// As strands-cli prints a result: whole floats as integers.
    pub fn shown(self) -> String {
        match self {
            Num::Int(i) => i.to_string(),
            Num::Float(f) if f.is_finite() && f.fract() == 0.0 => {
                if f == 0.0 {
                    "0".into()
                } else {
                    format!("{f:.0}")
                }
            }
            Num::Float(f) => python_float(f),
        }
    }
}

/// Python's `repr` of a float that is not whole.
fn python_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..16).contains(&exp) {
        f.to_string()
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

/// Evaluates `text` as Python arithmetic.
pub fn evaluate(text: &str) -> Result<Num, CalcError> {
    if text.len() > MAX_LEN {
        return Err(CalcError::Unsupported(format!(
            "the expression is longer than {MAX_LEN} characters"
        )));
    }
    let tokens = lex(text)?;
    let mut p = Parser {
        tokens,
        pos: 0,
        depth: 0,
    };
    let value = p.expr()?;
    match p.peek() {
        None => Ok(value),
        Some(t) => Err(p.unexpected(t)),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(Num),
    /// `+ - * / // % ** ( )`
    Op(&'static str),
    /// Something Python parses but the calculator refuses: the name of
    /// the Python node (`Name`, `Call`, `Compare`, `BitXor`, ...).
    Refused(&'static str, bool),
}

const OPS: [&str; 9] = ["**", "//", "+", "-", "*", "/", "%", "(", ")"];

/// Python's names for operators the calculator refuses; `true` for
/// binary operations, `false` for expression kinds.
const REFUSED: [(&str, &str, bool); 13] = [
    ("<<", "LShift", true),
    (">>", "RShift", true),
    ("==", "Compare", false),
    ("!=", "Compare", false),
    ("<=", "Compare", false),
    (">=", "Compare", false),
    ("<", "Compare", false),
    (">", "Compare", false),
    ("^", "BitXor", true),
    ("&", "BitAnd", true),
    ("|", "BitOr", true),
    ("@", "MatMult", true),
    ("~", "Invert", false),
];

fn lex(text: &str) -> Result<Vec<Tok>, CalcError> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    'outer: while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let (n, len) = number(&text[i..])?;
            out.push(Tok::Num(n));
            i += len;
            continue;
        }
        for op in OPS {
            if text[i..].starts_with(op) {
                out.push(Tok::Op(op));
                i += op.len();
                continue 'outer;
            }
        }
        for (op, name, binary) in REFUSED {
            if text[i..].starts_with(op) {
                out.push(Tok::Refused(name, binary));
                i += op.len();
                continue 'outer;
            }
        }
        if c == b'_' || c.is_ascii_alphabetic() {
            let end = text[i..]
                .find(|ch: char| !(ch == '_' || ch.is_ascii_alphanumeric()))
                .map_or(text.len(), |e| i + e);
            let called = text[end..].trim_start().starts_with('(');
            out.push(Tok::Refused(if called { "Call" } else { "Name" }, false));
            // A call's arguments are never looked at.
            return Ok(out);
        }
        if c == b'"' || c == b'\'' {
            return Err(CalcError::Unsupported(
                "Unsupported constant type: <class 'str'>".into(),
            ));
        }
        let ch = text[i..].chars().next().unwrap_or('?');
        return Err(CalcError::Syntax(format!(
            "invalid character '{ch}' at position {}",
            text[..i].chars().count() + 1
        )));
    }
    Ok(out)
}

/// A number literal at the start of `s`: its value and length.
fn number(s: &str) -> Result<(Num, usize), CalcError> {
    let b = s.as_bytes();
    let radix = match (b.first(), b.get(1).map(u8::to_ascii_lowercase)) {
        (Some(b'0'), Some(b'x')) => 16,
        (Some(b'0'), Some(b'o')) => 8,
        (Some(b'0'), Some(b'b')) => 2,
        _ => 10,
    };
    if radix != 10 {
        let len = 2 + s[2..]
            .find(|c: char| !(c == '_' || c.is_ascii_alphanumeric()))
            .unwrap_or(s.len() - 2);
        let digits: String = s[2..len].chars().filter(|c| *c != '_').collect();
        return i128::from_str_radix(&digits, radix)
            .map(|n| (Num::Int(n), len))
            .map_err(|_| CalcError::Syntax(format!("invalid number literal `{}`", &s[..len])));
    }
    let mut len = 0;
    let mut float = false;
    let digits = |from: usize| {
        s[from..]
            .find(|c: char| !(c == '_' || c.is_ascii_digit()))
            .map_or(s.len(), |e| from + e)
    };
    len = digits(len);
    if b.get(len) == Some(&b'.') {
        float = true;
        len = digits(len + 1);
    }
    if matches!(b.get(len), Some(b'e' | b'E')) {
        let mut j = len + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if b.get(j).is_some_and(u8::is_ascii_digit) {
            float = true;
            len = digits(j);
        }
    }
    let literal: String = s[..len].chars().filter(|c| *c != '_').collect();
    if b.get(len)
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
    {
        return Err(CalcError::Syntax(format!(
            "invalid number literal `{}`",
            &s[..=len]
        )));
    }
    let bad = || CalcError::Syntax(format!("invalid number literal `{}`", &s[..len]));
    if float {
        literal
            .parse::<f64>()
            .map(|f| (Num::Float(f), len))
            .map_err(|_| bad())
    } else {
        literal
            .parse::<i128>()
            .map(|n| (Num::Int(n), len))
            .map_err(|_| CalcError::Range(format!("the integer `{literal}` is too large")))
    }
}

struct Parser {
    tokens: Vec<Tok>,
    pos: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<Tok> {
        self.tokens.get(self.pos).cloned()
    }

    fn eat(&mut self, op: &str) -> bool {
        if matches!(self.tokens.get(self.pos), Some(Tok::Op(o)) if *o == op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn unexpected(&self, t: Tok) -> CalcError {
        match t {
            Tok::Refused(name, true) => {
                CalcError::Unsupported(format!("Unsupported operation: {name}"))
            }
            Tok::Refused("Invert", false) => {
                CalcError::Unsupported("Unsupported unary operation: Invert".into())
            }
            Tok::Refused(name, false) => {
                CalcError::Unsupported(format!("Unsupported expression type: {name}"))
            }
            Tok::Op(")") => CalcError::Syntax("unmatched ')'".into()),
            Tok::Op(op) => CalcError::Syntax(format!("unexpected `{op}`")),
            Tok::Num(_) => CalcError::Syntax("two numbers without an operator".into()),
        }
    }

    fn nested<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, CalcError>,
    ) -> Result<T, CalcError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(CalcError::Unsupported(format!(
                "the expression nests deeper than {MAX_DEPTH} levels"
            )));
        }
        let r = f(self);
        self.depth -= 1;
        r
    }

    fn expr(&mut self) -> Result<Num, CalcError> {
        let mut left = self.term()?;
        loop {
            if self.eat("+") {
                left = arith(left, self.term()?, Bin::Add)?;
            } else if self.eat("-") {
                left = arith(left, self.term()?, Bin::Sub)?;
            } else {
                return Ok(left);
            }
        }
    }

    fn term(&mut self) -> Result<Num, CalcError> {
        let mut left = self.factor()?;
        loop {
            let op = if self.eat("*") {
                Bin::Mul
            } else if self.eat("//") {
                Bin::FloorDiv
            } else if self.eat("/") {
                Bin::Div
            } else if self.eat("%") {
                Bin::Mod
            } else {
                return Ok(left);
            };
            left = arith(left, self.factor()?, op)?;
        }
    }

    fn factor(&mut self) -> Result<Num, CalcError> {
        if self.eat("-") {
            return self.nested(|p| {
                Ok(match p.factor()? {
                    Num::Int(i) => Num::Int(i.checked_neg().ok_or_else(too_large)?),
                    Num::Float(f) => Num::Float(-f),
                })
            });
        }
        if self.eat("+") {
            return self.nested(Parser::factor);
        }
        self.power()
    }

    fn power(&mut self) -> Result<Num, CalcError> {
        let base = self.atom()?;
        if self.eat("**") {
            let exp = self.nested(Parser::factor)?;
            return arith(base, exp, Bin::Pow);
        }
        Ok(base)
    }

    fn atom(&mut self) -> Result<Num, CalcError> {
        match self.peek() {
            Some(Tok::Num(n)) => {
                self.pos += 1;
                Ok(n)
            }
            Some(Tok::Op("(")) => {
                self.pos += 1;
                let v = self.nested(Parser::expr)?;
                if !self.eat(")") {
                    return Err(match self.peek() {
                        Some(t @ Tok::Refused(..)) => self.unexpected(t),
                        _ => CalcError::Syntax("'(' was never closed".into()),
                    });
                }
                Ok(v)
            }
            Some(t) => Err(self.unexpected(t)),
            None => Err(CalcError::Syntax("unexpected end of expression".into())),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Bin {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
}

fn too_large() -> CalcError {
    CalcError::Range("the integer result is too large (more than 128 bits)".into())
}

fn finite(f: f64) -> Result<Num, CalcError> {
    if f.is_finite() {
        Ok(Num::Float(f))
    } else {
        Err(CalcError::Range("the result is out of range".into()))
    }
}

/// One operation with Python's rules for ints and floats.
fn arith(a: Num, b: Num, op: Bin) -> Result<Num, CalcError> {
    use Num::Int;
    match (a, b, op) {
        (Int(x), Int(y), Bin::Add) => x.checked_add(y).map(Int).ok_or_else(too_large),
        (Int(x), Int(y), Bin::Sub) => x.checked_sub(y).map(Int).ok_or_else(too_large),
        (Int(x), Int(y), Bin::Mul) => x.checked_mul(y).map(Int).ok_or_else(too_large),
        (Int(_), Int(0), Bin::FloorDiv | Bin::Mod) => Err(CalcError::DivisionByZero),
        (Int(x), Int(y), Bin::FloorDiv) => {
            let q = x.checked_div(y).ok_or_else(too_large)?;
            Ok(Int(if x % y != 0 && ((x < 0) != (y < 0)) {
                q - 1
            } else {
                q
            }))
        }
        (Int(x), Int(y), Bin::Mod) => {
            let r = x.checked_rem(y).ok_or_else(too_large)?;
            Ok(Int(if r != 0 && ((r < 0) != (y < 0)) {
                r + y
            } else {
                r
            }))
        }
        (Int(x), Int(y), Bin::Pow) if y >= 0 => {
            let e = u32::try_from(y).map_err(|_| too_large())?;
            x.checked_pow(e).map(Int).ok_or_else(too_large)
        }
        (_, _, Bin::Div | Bin::FloorDiv | Bin::Mod) if b.float() == 0.0 => {
            Err(CalcError::DivisionByZero)
        }
        (_, _, op) => {
            let (x, y) = (a.float(), b.float());
            match op {
                Bin::Add => finite(x + y),
                Bin::Sub => finite(x - y),
                Bin::Mul => finite(x * y),
                Bin::Div => finite(x / y),
                Bin::FloorDiv => finite((x / y).floor()),
                Bin::Mod => {
                    let r = x % y;
                    finite(if r != 0.0 && ((r < 0.0) != (y < 0.0)) {
                        r + y
                    } else {
                        r
                    })
                }
                Bin::Pow => {
                    if x == 0.0 && y < 0.0 {
                        return Err(CalcError::DivisionByZero);
                    }
                    if x < 0.0 && y.fract() != 0.0 {
                        return Err(CalcError::Unsupported(
                            "the result is a complex number".into(),
                        ));
                    }
                    finite(x.powf(y))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(s: &str) -> String {
        match evaluate(s) {
            Ok(n) => n.shown(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn arithmetic_as_python_does_it() {
        for (expr, want) in [
            ("2 + 2", "4"),
            ("10 * 5 - 3", "47"),
            ("10 / 2", "5"),
            ("7 / 2", "3.5"),
            ("7 // 2", "3"),
            ("-7 // 2", "-4"),
            ("7 % -3", "-2"),
            ("-7 % 3", "2"),
            ("2 ** 10", "1024"),
            ("-2 ** 2", "-4"),
            ("(-2) ** 2", "4"),
            ("2 ** -1", "0.5"),
            ("2 ** 3 ** 2", "512"),
            ("0.1 + 0.2", "0.30000000000000004"),
            ("1 / 3", "0.3333333333333333"),
            ("1.5e-7 + 0", "1.5e-07"),
            ("1e20", "100000000000000000000"),
            ("1_000 + .5", "1000.5"),
            ("0x10 + 0b11 + 0o7", "26"),
            ("+-+3", "-3"),
            ("7.5 // 2", "3"),
            ("5.5 % 2", "1.5"),
            ("  ((1 + 2) * (3 + 4))  ", "21"),
        ] {
            assert_eq!(shown(expr), want, "{expr}");
        }
    }

    #[test]
    fn anything_but_arithmetic_is_refused() {
        for (expr, want) in [
            (
                "__import__('os').system('id')",
                "Error: Unsupported expression type: Call",
            ),
            (
                "open('/etc/passwd')",
                "Error: Unsupported expression type: Call",
            ),
            ("x + 1", "Error: Unsupported expression type: Name"),
            ("1 + y", "Error: Unsupported expression type: Name"),
            ("'a' * 3", "Error: Unsupported constant type: <class 'str'>"),
            ("2 ^ 3", "Error: Unsupported operation: BitXor"),
            ("1 << 200", "Error: Unsupported operation: LShift"),
            ("1 < 2", "Error: Unsupported expression type: Compare"),
            ("~1", "Error: Unsupported unary operation: Invert"),
            ("1 / 0", "Error: Division by zero"),
            ("5 // 0", "Error: Division by zero"),
            ("5 % 0.0", "Error: Division by zero"),
            ("0 ** -1", "Error: Division by zero"),
            ("(-8) ** 0.5", "Error: the result is a complex number"),
            (
                "2 ** 200",
                "Error evaluating expression: the integer result is too large (more than 128 bits)",
            ),
            (
                "10 ** 10 ** 10",
                "Error evaluating expression: the integer result is too large (more than 128 bits)",
            ),
            (
                "2.0 ** 5000",
                "Error evaluating expression: the result is out of range",
            ),
        ] {
            assert_eq!(shown(expr), want, "{expr}");
        }
        for bad in ["1 +", "(1", "1)", "2 3", "1 $ 2", "", "3abc"] {
            assert!(
                shown(bad).starts_with("Syntax error"),
                "{bad}: {}",
                shown(bad)
            );
        }
        let deep = format!("{}1{}", "(".repeat(500), ")".repeat(500));
        assert!(shown(&deep).contains("deeper than"), "{}", shown(&deep));
        assert!(shown(&"-".repeat(5000)).contains("deeper than"));
        assert!(shown(&"1+".repeat(6000)).contains("longer than"));
    }

    #[test]
    fn the_tool_answers_like_strands_cli() {
        let r = run(&json!({"expression": " 6 * 7 "}));
        assert!(!r.is_error);
        assert_eq!(r.content, "6 * 7 = 42");
        let r = run(&json!({"expression": "import os"}));
        assert!(r.is_error, "{}", r.content);
        let r = run(&json!({"expression": "  "}));
        assert_eq!(r.content, "Error: 'expression' parameter is required");
    }
}
