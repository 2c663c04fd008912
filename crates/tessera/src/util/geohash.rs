//! The geohash arithmetic behind the GEO commands, reproducing Redis 7.0
//! bit for bit: a position is a 52-bit integer (26 bits of latitude on the
//! even bits, 26 of longitude on the odd ones, over the Web Mercator
//! latitude range ±85.05112878), stored as a sorted-set score.
//!
//! A radius or box search covers the shape with the cell holding its centre
//! plus that cell's 8 neighbours, at a cell size (step) estimated from the
//! search radius; each cell is one score interval of the sorted set, and
//! every candidate found there is checked with the haversine distance.
//! Everything here (the step estimate, the bounding box used to drop
//! useless neighbours, the float expressions and their evaluation order)
//! follows Redis's, so that the same points are found and the same
//! distances printed. No I/O, no keyspace.

use std::f64::consts::PI;

/// Bits per coordinate of a stored position.
pub const STEP_MAX: u8 = 26;
pub const LON_MIN: f64 = -180.0;
pub const LON_MAX: f64 = 180.0;
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;
/// Redis's earth radius for the haversine formula, in metres.
pub const EARTH_RADIUS_M: f64 = 6372797.560856;
const MERCATOR_MAX: f64 = 20037726.37;
/// Degrees → radians factor (C's `M_PI / 180.0`, folded the same way).
const D_R: f64 = PI / 180.0;

#[inline]
fn deg_rad(a: f64) -> f64 {
    a * D_R
}

#[inline]
fn rad_deg(a: f64) -> f64 {
    a / D_R
}

/// A cell: `step` bits per coordinate, interleaved in `bits`. The all-zero
/// value marks a neighbour dropped from a search.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Cell {
    pub bits: u64,
    pub step: u8,
}

impl Cell {
    pub const NONE: Cell = Cell { bits: 0, step: 0 };

    pub fn is_none(&self) -> bool {
        self.bits == 0 && self.step == 0
    }

    /// The cell's bits shifted to the 52-bit score scale: the lowest score
    /// inside it.
    pub fn align52(&self) -> u64 {
        self.bits << (52 - 2 * self.step as u32)
    }

    /// The score interval `[min, max)` holding exactly this cell's points.
    pub fn score_range(&self) -> (u64, u64) {
        let next = Cell {
            bits: self.bits.wrapping_add(1),
            step: self.step,
        };
        (self.align52(), next.align52())
    }
}

/// Spreads the 32 bits of `v` onto the even bits of a u64.
fn spread(v: u32) -> u64 {
    let mut x = v as u64;
    x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
    x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
    x = (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// Gathers the even bits of `v` into a u32 (the inverse of [`spread`]).
fn gather(v: u64) -> u32 {
    let mut x = v & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | (x >> 4)) & 0x00ff_00ff_00ff_00ff;
    x = (x | (x >> 8)) & 0x0000_ffff_0000_ffff;
    x = (x | (x >> 16)) & 0x0000_0000_ffff_ffff;
    x as u32
}

/// Latitude cell index on the even bits, longitude on the odd bits.
pub fn interleave(lat: u32, lon: u32) -> u64 {
    spread(lat) | (spread(lon) << 1)
}

/// The (latitude, longitude) cell indexes of interleaved bits.
pub fn deinterleave(bits: u64) -> (u32, u32) {
    (gather(bits), gather(bits >> 1))
}

/// An interval of one coordinate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

/// The coordinate ranges positions are stored over.
pub const LON_RANGE: Range = Range {
    min: LON_MIN,
    max: LON_MAX,
};
pub const LAT_RANGE: Range = Range {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// Whether a longitude/latitude pair may be stored (GEOADD's check).
pub fn valid_lon_lat(lon: f64, lat: f64) -> bool {
    (LON_MIN..=LON_MAX).contains(&lon) && (LAT_MIN..=LAT_MAX).contains(&lat)
}

/// The cell of `step` bits per coordinate holding a point, over the given
/// ranges; None outside the storable area or the ranges. A coordinate equal
/// to its range's maximum lands one past the last cell, as in Redis.
pub fn encode(lon_r: Range, lat_r: Range, lon: f64, lat: f64, step: u8) -> Option<Cell> {
    if step == 0 || step > 32 || !valid_lon_lat(lon, lat) {
        return None;
    }
    if lat < lat_r.min || lat > lat_r.max || lon < lon_r.min || lon > lon_r.max {
        return None;
    }
    let cells = (1u64 << step) as f64;
    let lat_off = (lat - lat_r.min) / (lat_r.max - lat_r.min) * cells;
    let lon_off = (lon - lon_r.min) / (lon_r.max - lon_r.min) * cells;
    // C converts the offsets to uint32_t by truncation; they lie in 0..=2^step.
    Some(Cell {
        bits: interleave(lat_off as u32, lon_off as u32),
        step,
    })
}

/// [`encode`] over the storage ranges.
pub fn encode_wgs84(lon: f64, lat: f64, step: u8) -> Option<Cell> {
    encode(LON_RANGE, LAT_RANGE, lon, lat, step)
}

/// The score GEOADD stores for a point (None if the point is invalid).
pub fn score_of(lon: f64, lat: f64) -> Option<u64> {
    encode_wgs84(lon, lat, STEP_MAX).map(|c| c.align52())
}

/// The rectangle a cell covers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Area {
    pub lon: Range,
    pub lat: Range,
}

/// The area of a cell over the storage ranges. The cell index arithmetic is
/// 32-bit, as in Redis (so an index of u32::MAX wraps when its upper edge is
/// computed).
pub fn decode(cell: Cell) -> Area {
    let (ilat, ilon) = deinterleave(cell.bits);
    let cells = (1u64 << cell.step) as f64;
    let lat_scale = LAT_RANGE.max - LAT_RANGE.min;
    let lon_scale = LON_RANGE.max - LON_RANGE.min;
    Area {
        lat: Range {
            min: LAT_RANGE.min + (ilat as f64 / cells) * lat_scale,
            max: LAT_RANGE.min + (ilat.wrapping_add(1) as f64 / cells) * lat_scale,
        },
        lon: Range {
            min: LON_RANGE.min + (ilon as f64 / cells) * lon_scale,
            max: LON_RANGE.min + (ilon.wrapping_add(1) as f64 / cells) * lon_scale,
        },
    }
}

/// The centre of an area, clamped to the storable ranges: (lon, lat).
pub fn area_center(a: &Area) -> (f64, f64) {
    let lon = ((a.lon.min + a.lon.max) / 2.0).clamp(LON_MIN, LON_MAX);
    let lat = ((a.lat.min + a.lat.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// C's `(uint64_t)d` as GCC compiles it for x86-64: exact below 2^63 (a
/// negative value wraps as its truncated int64 does), offset by 2^63 above
/// that, and 2^63 XOR the int64 "indefinite" value (that is 0) for values
/// from 2^64 on and for infinities; -inf and NaN give 2^63.
pub fn c_double_to_u64(d: f64) -> u64 {
    const TWO63: f64 = 9_223_372_036_854_775_808.0;
    // cvttsd2si: truncation, or i64::MIN when out of range or NaN.
    fn cvtt(d: f64) -> i64 {
        if !(-TWO63..TWO63).contains(&d) {
            i64::MIN
        } else {
            d as i64
        }
    }
    if d >= TWO63 {
        (cvtt(d - TWO63) as u64) ^ (1u64 << 63)
    } else {
        cvtt(d) as u64
    }
}

/// The (lon, lat) a stored score stands for: the centre of its 26-bit cell.
/// Any score decodes (scores that GEOADD did not write give clamped or
/// arbitrary positions, as in Redis).
pub fn decode_score(score: f64) -> (f64, f64) {
    let cell = Cell {
        bits: c_double_to_u64(score),
        step: STEP_MAX,
    };
    area_center(&decode(cell))
}

/// The 11-character standard geohash (latitude range ±90) of a position.
pub fn geohash_string(lon: f64, lat: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let r_lon = Range {
        min: -180.0,
        max: 180.0,
    };
    let r_lat = Range {
        min: -90.0,
        max: 90.0,
    };
    let bits = encode(r_lon, r_lat, lon, lat, STEP_MAX).map_or(0, |c| c.bits);
    let mut out = [b'0'; 11];
    // Only 52 bits: the 11th character is always '0'.
    for (i, c) in out.iter_mut().take(10).enumerate() {
        let idx = (bits >> (52 - (i + 1) * 5)) & 0x1f;
        *c = ALPHABET[idx as usize];
    }
    out
}

// ---- neighbours ------------------------------------------------------------------------------

/// Moves a cell one column east (`d > 0`) or west, wrapping around.
fn move_lon(c: &mut Cell, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - 2 * c.step as u32;
    let mut x = c.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let y = c.bits & 0x5555_5555_5555_5555;
    let zz = 0x5555_5555_5555_5555u64 >> shift;
    if d > 0 {
        x = x.wrapping_add(zz + 1);
    } else {
        x = (x | zz).wrapping_sub(zz + 1);
    }
    x &= 0xaaaa_aaaa_aaaa_aaaau64 >> shift;
    c.bits = x | y;
}

/// Moves a cell one row north (`d > 0`) or south, wrapping around.
fn move_lat(c: &mut Cell, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - 2 * c.step as u32;
    let x = c.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let mut y = c.bits & 0x5555_5555_5555_5555;
    let zz = 0xaaaa_aaaa_aaaa_aaaau64 >> shift;
    if d > 0 {
        y = y.wrapping_add(zz + 1);
    } else {
        y = (y | zz).wrapping_sub(zz + 1);
    }
    y &= 0x5555_5555_5555_5555u64 >> shift;
    c.bits = x | y;
}

fn moved(c: Cell, dlon: i8, dlat: i8) -> Cell {
    let mut n = c;
    move_lon(&mut n, dlon);
    move_lat(&mut n, dlat);
    n
}

// ---- shapes and distances --------------------------------------------------------------------

/// Haversine distance in metres between two (lon, lat) points in degrees.
/// When the longitudes give exactly no east-west term, Redis 7.0 takes the
/// plain arc along the meridian instead (which can differ in the last bit),
/// and so does this.
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let lon1r = deg_rad(lon1);
    let lon2r = deg_rad(lon2);
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return EARTH_RADIUS_M * (deg_rad(lat2) - deg_rad(lat1)).abs();
    }
    let lat1r = deg_rad(lat1);
    let lat2r = deg_rad(lat2);
    let u = ((lat2r - lat1r) / 2.0).sin();
    2.0 * EARTH_RADIUS_M * (u * u + lat1r.cos() * lat2r.cos() * v * v).sqrt().asin()
}

/// What a search covers, in the unit of `conversion` (metres per unit).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ShapeKind {
    Radius(f64),
    Box { width: f64, height: f64 },
}

/// A search area around a centre (lon, lat).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    pub lon: f64,
    pub lat: f64,
    pub conversion: f64,
    pub kind: ShapeKind,
}

impl Shape {
    /// The area's bounding box: (min lon, min lat, max lon, max lat).
    fn bounding_box(&self) -> (f64, f64, f64, f64) {
        let (height, width) = match self.kind {
            ShapeKind::Radius(r) => (self.conversion * r, self.conversion * r),
            ShapeKind::Box { width, height } => (
                self.conversion * (height / 2.0),
                self.conversion * (width / 2.0),
            ),
        };
        let lat_delta = rad_deg(height / EARTH_RADIUS_M);
        let lon_delta_top = rad_deg(width / EARTH_RADIUS_M / deg_rad(self.lat + lat_delta).cos());
        let lon_delta_bottom =
            rad_deg(width / EARTH_RADIUS_M / deg_rad(self.lat - lat_delta).cos());
        // Meridians converge towards the pole, so the wider edge is the one
        // nearer the equator.
        let lon_delta = if self.lat < 0.0 {
            lon_delta_bottom
        } else {
            lon_delta_top
        };
        (
            self.lon - lon_delta,
            self.lat - lat_delta,
            self.lon + lon_delta,
            self.lat + lat_delta,
        )
    }

    /// The distance from the centre to the farthest point of the shape
    /// that the step estimate uses, in metres.
    fn reach_m(&self) -> f64 {
        let r = match self.kind {
            ShapeKind::Radius(r) => r,
            ShapeKind::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        };
        r * self.conversion
    }

    /// The point's distance from the centre in metres if it lies inside.
    pub fn contains(&self, lon: f64, lat: f64) -> Option<f64> {
        match self.kind {
            ShapeKind::Radius(r) => {
                let d = distance(self.lon, self.lat, lon, lat);
                (d <= r * self.conversion).then_some(d)
            }
            ShapeKind::Box { width, height } => {
                let (w, h) = (width * self.conversion, height * self.conversion);
                let lon_d = distance(lon, lat, self.lon, lat);
                let lat_d = distance(lon, lat, lon, self.lat);
                if lon_d > w / 2.0 || lat_d > h / 2.0 {
                    return None;
                }
                Some(distance(self.lon, self.lat, lon, lat))
            }
        }
    }

    /// The cells to scan, in Redis's order: the centre's cell, then north,
    /// south, east, west, north-east, north-west, south-east, south-west;
    /// [`Cell::NONE`] for neighbours that cannot hold a match.
    pub fn cells(&self) -> [Cell; 9] {
        let (min_lon, min_lat, max_lon, max_lat) = self.bounding_box();
        let mut step = estimate_step(self.reach_m(), self.lat);
        let mut cell = encode_wgs84(self.lon, self.lat, step).unwrap_or_default();
        let mut nb = neighbours(cell);
        // The estimate can be too fine near a cell edge: if a side neighbour
        // does not reach the bounding box, use cells twice as large.
        let too_small = decode(nb[0]).lat.max < max_lat
            || decode(nb[1]).lat.min > min_lat
            || decode(nb[2]).lon.max < max_lon
            || decode(nb[3]).lon.min > min_lon;
        if step > 1 && too_small {
            step -= 1;
            cell = encode_wgs84(self.lon, self.lat, step).unwrap_or_default();
            nb = neighbours(cell);
        }
        let [mut n, mut s, mut e, mut w, mut ne, mut nw, mut se, mut sw] = nb;
        if step >= 2 {
            let area = decode(cell);
            if area.lat.min < min_lat {
                (s, sw, se) = (Cell::NONE, Cell::NONE, Cell::NONE);
            }
            if area.lat.max > max_lat {
                (n, ne, nw) = (Cell::NONE, Cell::NONE, Cell::NONE);
            }
            if area.lon.min < min_lon {
                (w, sw, nw) = (Cell::NONE, Cell::NONE, Cell::NONE);
            }
            if area.lon.max > max_lon {
                (e, se, ne) = (Cell::NONE, Cell::NONE, Cell::NONE);
            }
        }
        [cell, n, s, e, w, ne, nw, se, sw]
    }
}

/// The 8 neighbours of a cell: north, south, east, west, north-east,
/// north-west, south-east, south-west.
fn neighbours(c: Cell) -> [Cell; 8] {
    [
        moved(c, 0, 1),
        moved(c, 0, -1),
        moved(c, 1, 0),
        moved(c, -1, 0),
        moved(c, 1, 1),
        moved(c, -1, 1),
        moved(c, 1, -1),
        moved(c, -1, -1),
    ]
}

/// The cell size (bits per coordinate) for a search reaching `range_m`
/// metres around latitude `lat`: the finest whose cells are still about as
/// large as the range, coarser near the poles, within 1..=26.
pub fn estimate_step(range_m: f64, lat: f64) -> u8 {
    if range_m == 0.0 {
        return STEP_MAX;
    }
    let mut range = range_m;
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, STEP_MAX as i32) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleave_roundtrips() {
        for (a, b) in [
            (0u32, 0u32),
            (1, 0),
            (0, 1),
            (0x3ff_ffff, 0x155_5555),
            (u32::MAX, 7),
        ] {
            assert_eq!(deinterleave(interleave(a, b)), (a, b));
        }
        assert_eq!(interleave(1, 0), 1);
        assert_eq!(interleave(0, 1), 2);
    }

    #[test]
    fn palermo_matches_redis() {
        // GEOADD Sicily 13.361389 38.115556 "Palermo" stores this score.
        assert_eq!(score_of(13.361389, 38.115556), Some(3479099956230698));
        let (lon, lat) = decode_score(3479099956230698.0);
        assert_eq!(format!("{lon:.17}"), "13.36138933897018433");
        assert_eq!(format!("{lat:.17}"), "38.11555639549629859");
        assert_eq!(&geohash_string(lon, lat), b"sqc8b49rny0");
    }

    #[test]
    fn distance_matches_redis() {
        let (a, b) = (
            decode_score(3479099956230698.0),
            decode_score(3479447370796909.0),
        );
        assert_eq!(
            format!("{:.4}", distance(a.0, a.1, b.0, b.1)),
            "166274.1516"
        );
    }

    #[test]
    fn same_longitude_uses_the_meridian_arc() {
        // redis-server 7.0.15: 30978466.601920255 ft (the haversine gives ...258).
        let (lon, lat) = decode_score(10508397703353616.0);
        assert_eq!(distance(180.0, 0.0, lon, lat) / 0.3048, 30978466.601920255);
    }

    #[test]
    fn c_cast_semantics() {
        assert_eq!(c_double_to_u64(-5.5), (-5i64) as u64);
        assert_eq!(c_double_to_u64(1e19), 10_000_000_000_000_000_000);
        assert_eq!(c_double_to_u64(1e300), 0);
        assert_eq!(c_double_to_u64(f64::INFINITY), 0);
        assert_eq!(c_double_to_u64(f64::NEG_INFINITY), 1 << 63);
    }

    #[test]
    fn step_estimate() {
        assert_eq!(estimate_step(0.0, 0.0), 26);
        assert_eq!(estimate_step(1.0, 0.0), 24);
        assert_eq!(estimate_step(1.0, 70.0), 23);
        assert_eq!(estimate_step(1.0, -85.0), 22);
        assert_eq!(estimate_step(1e9, 0.0), 1);
    }
}
