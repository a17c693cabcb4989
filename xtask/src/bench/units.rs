//! How times and ratios are written on the page and in the charts.

/// A time unit for nanosecond values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Unit {
    /// `ns`, `µs`, `ms` or `s`.
    pub(crate) symbol: &'static str,
    /// Nanoseconds in one of it.
    pub(crate) ns: f64,
}

const UNITS: [Unit; 4] = [
    Unit {
        symbol: "ns",
        ns: 1.0,
    },
    Unit {
        symbol: "µs",
        ns: 1e3,
    },
    Unit {
        symbol: "ms",
        ns: 1e6,
    },
    Unit {
        symbol: "s",
        ns: 1e9,
    },
];

impl Unit {
    /// The largest unit in which `ns` is at least 1 (nanoseconds for less).
    pub(crate) fn for_ns(ns: f64) -> Self {
        UNITS
            .into_iter()
            .rev()
            .find(|unit| ns >= unit.ns)
            .unwrap_or(UNITS[0])
    }
}

/// Three significant digits, no more decimals than that needs (`1.23`, `12.3`, `123`); below
/// 0.1, two significant digits (`0.043`), so a small ratio does not round to nothing.
pub(crate) fn three_digits(value: f64) -> String {
    if value > 0.0 && value < 0.1 {
        // 0.043 has its first significant digit at 10^-2: three decimals show two digits.
        let decimals = (1.0 - value.log10().floor()).min(12.0) as usize;
        format!("{value:.decimals$}")
    } else if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// A time in nanoseconds, in its own unit with three significant digits (`1.53 ms`).
pub(crate) fn time(ns: f64) -> String {
    let unit = Unit::for_ns(ns);
    format!("{} {}", three_digits(ns / unit.ns), unit.symbol)
}

/// A ratio to ours (`1.00×`, `0.52×`, `3500×`).
pub(crate) fn ratio(ratio: f64) -> String {
    format!("{}×", three_digits(ratio))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_take_the_unit_that_fits() {
        assert_eq!(time(0.5), "0.50 ns");
        assert_eq!(time(999.0), "999 ns");
        assert_eq!(time(1_530_000.0), "1.53 ms");
        assert_eq!(time(12_345.0), "12.3 µs");
        assert_eq!(time(2.5e9), "2.50 s");
        assert_eq!(time(7.2e12), "7200 s");
    }

    #[test]
    fn ratios_keep_three_digits() {
        assert_eq!(ratio(1.0), "1.00×");
        assert_eq!(ratio(0.516), "0.52×");
        assert_eq!(ratio(12.34), "12.3×");
        assert_eq!(ratio(3499.6), "3500×");
        assert_eq!(ratio(3.95 / 91.9), "0.043×");
        assert_eq!(ratio(0.0012), "0.0012×");
        assert_eq!(ratio(0.0), "0.00×");
    }
}
