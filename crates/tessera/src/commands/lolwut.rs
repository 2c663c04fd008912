//! LOLWUT: computer art and the Redis version.
//!
//! redis-server 7.0 answers plain LOLWUT with its version line, `VERSION 5`
//! with Georg Nees's "Schotter" drawn in Braille characters, and `VERSION 6`
//! with a city skyline in terminal colours. Both drawings are random (as
//! Redis's are), so what must match Redis is their geometry, their
//! parameters' defaults and limits, and the deterministic parts: Schotter's
//! first two rows are never disturbed, and a one-row skyline is all sky.
//! Sizes follow Redis's arithmetic, single-precision floats included, so
//! the same arguments give a drawing of the same size.

use rand::Rng;

use super::args::{eq_ic, int};
use super::flags::*;
use super::meta::arg as a;
use super::{CmdResult, CommandSpec, Ctx};
use crate::REDIS_COMPAT_VERSION;

pub static COMMANDS: &[CommandSpec] = &[CommandSpec::new(
    "lolwut",
    -1,
    READONLY | FAST,
    "server",
    "5.0.0",
    "Shows a piece of computer art and the Redis version.",
    lolwut,
)
.complexity("")
.args(&[a::integer("version").token("VERSION").optional()])];

fn lolwut(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // As Redis: VERSION is honoured only as the first argument and with a
    // value, which is read as a C unsigned int (so 2^32 + 5 is 5); the
    // drawing's own arguments follow it.
    let (version, rest) = if args.len() >= 3 && eq_ic(args[1], "version") {
        (Some(int(args[2])? as u32), &args[3..])
    } else {
        (None, &args[1..])
    };
    let text = match version {
        Some(5) => schotter(rest)?,
        Some(6) => skyline(rest)?,
        _ => format!("Redis ver. {REDIS_COMPAT_VERSION}\n").into_bytes(),
    };
    ctx.out.verbatim(b"txt", &text);
    Ok(())
}

/// The optional integer arguments, in order, clamped as Redis clamps them.
fn sizes<const N: usize>(
    args: &[&[u8]],
    defaults: [i64; N],
    limits: [(i64, i64); N],
) -> Result<[i64; N], super::CmdError> {
    let mut out = defaults;
    for (i, arg) in args.iter().take(N).enumerate() {
        out[i] = int(arg)?;
    }
    for (v, (lo, hi)) in out.iter_mut().zip(limits) {
        *v = (*v).clamp(lo, hi);
    }
    Ok(out)
}

/// A black-and-white canvas, one bit per pixel: the largest Schotter
/// Redis allows is 2,000 by about 400,000 pixels.
struct Bitmap {
    width: i32,
    height: i32,
    words_per_row: usize,
    bits: Vec<u64>,
}

impl Bitmap {
    fn new(width: i32, height: i32) -> Self {
        let words_per_row = (width.max(0) as usize).div_ceil(64);
        Bitmap {
            width,
            height,
            words_per_row,
            bits: vec![0; words_per_row * height.max(0) as usize],
        }
    }

    fn index(&self, x: i32, y: i32) -> Option<(usize, u64)> {
        if x < 0 || y < 0 || x >= self.width || y >= self.height {
            return None;
        }
        let word = y as usize * self.words_per_row + x as usize / 64;
        Some((word, 1u64 << (x % 64)))
    }

    fn set(&mut self, x: i32, y: i32) {
        if let Some((word, bit)) = self.index(x, y) {
            self.bits[word] |= bit;
        }
    }

    fn get(&self, x: i32, y: i32) -> bool {
        self.index(x, y)
            .is_some_and(|(word, bit)| self.bits[word] & bit != 0)
    }

    /// Bresenham's line, both ends included.
    fn line(&mut self, (mut x1, mut y1): (i32, i32), (x2, y2): (i32, i32)) {
        let dx = (x2 - x1).abs();
        let dy = (y2 - y1).abs();
        let sx = if x1 < x2 { 1 } else { -1 };
        let sy = if y1 < y2 { 1 } else { -1 };
        let mut err = dx - dy;
        loop {
            self.set(x1, y1);
            if x1 == x2 && y1 == y2 {
                break;
            }
            let e2 = err * 2;
            if e2 > -dy {
                err -= dy;
                x1 += sx;
            }
            if e2 < dx {
                err += dx;
                y1 += sy;
            }
        }
    }

    /// A square of diagonal `side` centred on (x, y), turned by `angle`
    /// radians. (Redis keeps the size and the running angle in floats, and
    /// divides by √2 as written to ten decimals, which rounding can tell
    /// apart from the exact value.)
    fn square(&mut self, x: i32, y: i32, side: f32, angle: f32) {
        #[allow(clippy::approx_constant)]
        const REDIS_SQRT_2: f64 = 1.4142135623;
        let half_diagonal = ((side as f64 / REDIS_SQRT_2) as f32 as f64).round();
        let mut k = (std::f64::consts::FRAC_PI_4 + angle as f64) as f32;
        let mut corners = [(0i32, 0i32); 4];
        for corner in &mut corners {
            let k64 = k as f64;
            *corner = (
                (k64.sin() * half_diagonal + x as f64).round() as i32,
                (k64.cos() * half_diagonal + y as f64).round() as i32,
            );
            k = (k as f64 + std::f64::consts::FRAC_PI_2) as f32;
        }
        for j in 0..4 {
            self.line(corners[j], corners[(j + 1) % 4]);
        }
    }

    /// Each 2x4 block of pixels as one Braille character (dots 1-2-3-7 on
    /// the left, 4-5-6-8 on the right), a line per four pixel rows.
    fn braille(&self) -> Vec<u8> {
        const DOTS: [(i32, i32, u32); 8] = [
            (0, 0, 0),
            (0, 1, 1),
            (0, 2, 2),
            (1, 0, 3),
            (1, 1, 4),
            (1, 2, 5),
            (0, 3, 6),
            (1, 3, 7),
        ];
        let mut text = Vec::new();
        for y in (0..self.height).step_by(4) {
            for x in (0..self.width).step_by(2) {
                let dots = DOTS
                    .iter()
                    .filter(|&&(dx, dy, _)| self.get(x + dx, y + dy))
                    .fold(0u32, |acc, &(_, _, bit)| acc | 1 << bit);
                let c = char::from_u32(0x2800 + dots).unwrap_or(' ');
                let mut utf8 = [0u8; 4];
                text.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
            }
            // (Redis compares the group's first row with the last row, so
            // the last line nearly always ends with a newline too.)
            if y != self.height - 1 {
                text.push(b'\n');
            }
        }
        text
    }
}

/// LOLWUT VERSION 5 [columns [squares-per-row [squares-per-column]]].
fn schotter(args: &[&[u8]]) -> Result<Vec<u8>, super::CmdError> {
    let [cols, per_row, per_col] = sizes(args, [66, 8, 12], [(1, 1000), (1, 200), (1, 200)])?;
    let width = cols as i32 * 2;
    let padding = if width > 4 { 2 } else { 0 };
    let side = (width - padding * 2) as f32 / per_row as f32;
    let height = (side * per_col as f32 + (padding * 2) as f32) as i32;
    let mut canvas = Bitmap::new(width, height);
    let mut rng = rand::thread_rng();
    for y in 0..per_col as i32 {
        for x in 0..per_row as i32 {
            let mut sx = (x as f32 * side + side / 2.0 + padding as f32) as i32;
            let mut sy = (y as f32 * side + side / 2.0 + padding as f32) as i32;
            let mut angle = 0.0f32;
            // Order gives way to disorder down the rows, from the third.
            if y > 1 {
                let mut disorder = || {
                    let r = rng.gen::<f32>() / per_col as f32 * y as f32;
                    if rng.gen::<bool>() {
                        -r
                    } else {
                        r
                    }
                };
                angle = disorder();
                let (dx, dy) = (disorder(), disorder());
                sx = (sx as f32 + dx * side / 3.0) as i32;
                sy = (sy as f32 + dy * side / 3.0) as i32;
            }
            canvas.square(sx, sy, side, angle);
        }
    }
    let mut text = canvas.braille();
    text.extend_from_slice(
        format!(
            "\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. {REDIS_COMPAT_VERSION}\n"
        )
        .as_bytes(),
    );
    Ok(text)
}

/// LOLWUT VERSION 6 [columns [rows]]: grey skyscrapers behind black ones
/// with lit windows, on white.
fn skyline(args: &[&[u8]]) -> Result<Vec<u8>, super::CmdError> {
    const SKY: u8 = 3;
    let [cols, rows] = sizes(args, [80, 20], [(1, 1000), (1, 1000)])?;
    let (width, height) = (cols as i32, rows as i32);
    let mut pixels = vec![SKY; (width * height) as usize];
    let mut rng = rand::thread_rng();
    let mut roll = |n: i32| rng.gen_range(0..n);

    struct Building {
        left: i32,
        width: i32,
        height: i32,
        color: u8,
        windows: bool,
    }
    let mut draw = |b: &Building, roll: &mut dyn FnMut(i32) -> i32| {
        let base = height - 1;
        let roof = base - b.height + 1;
        let right = b.left + b.width;
        for y in (roof..=base).rev() {
            for x in b.left..right {
                // The roof is two pixels narrower on each side.
                if y == roof && (x <= b.left + 1 || x >= right - 2) {
                    continue;
                }
                let mut color = b.color;
                let inside = x > b.left + 1 && x < right - 2 && y > roof + 1 && y < base - 1;
                if b.windows && inside {
                    // Windows two pixels wide (terminal cells are tall),
                    // each lit in one of the greys.
                    let (relx, rely) = (x - (b.left + 1), y - (roof + 1));
                    if (relx / 2) % 2 == 1 && rely % 2 == 1 {
                        color = 1 + roll(2) as u8;
                        // Both halves of a window alike (off the canvas,
                        // Redis reads black).
                        if relx % 2 == 1 {
                            color = if (1..=width).contains(&x) {
                                pixels[(y * width + x - 1) as usize]
                            } else {
                                0
                            };
                        }
                    }
                }
                if (0..width).contains(&x) && (0..height).contains(&y) {
                    pixels[(y * width + x) as usize] = color;
                }
            }
        }
    };
    // The light grey ones first, so the darker stand in front of them.
    for color in [2u8, 1] {
        let mut left = -10;
        while left < width {
            left += roll(8);
            let w = 10 + roll(9);
            let h = if color == 2 {
                height / 2 + roll(height) / 2
            } else {
                height / 2 + roll(height) / 3
            };
            let b = Building {
                left,
                width: w,
                height: h,
                color,
                windows: false,
            };
            draw(&b, &mut roll);
            left += if color == 2 { w / 2 } else { w + 1 };
        }
    }
    let mut left = -10;
    while left < width {
        left += roll(8);
        let mut w = 5 + roll(14);
        if w % 4 != 0 {
            w += w % 3;
        }
        let h = height / 3 + roll(height) / 2;
        let b = Building {
            left,
            width: w,
            height: h,
            color: 0,
            windows: true,
        };
        draw(&b, &mut roll);
        left += w + 5;
    }

    let mut text = Vec::with_capacity(pixels.len() * 14 + 160);
    for (y, row) in pixels.chunks(width as usize).enumerate() {
        for &p in row {
            // Foreground and background alike, for the same look on every
            // terminal.
            let escape: &[u8] = match p {
                1 => b"0;90;100m",
                2 => b"0;37;47m",
                3 => b"0;97;107m",
                _ => b"0;30;40m",
            };
            text.extend_from_slice(b"\x1b[");
            text.extend_from_slice(escape);
            text.extend_from_slice(b" \x1b[0m");
        }
        if y as i32 != height - 1 {
            text.push(b'\n');
        }
    }
    text.extend_from_slice(
        format!(
            "\nDedicated to the 8 bit game developers of past and present.\n\
             Original 8 bit image from Plaguemon by hikikomori. Redis ver. {REDIS_COMPAT_VERSION}\n"
        )
        .as_bytes(),
    );
    Ok(text)
}
