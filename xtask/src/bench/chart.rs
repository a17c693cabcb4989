//! One comparison as an SVG bar chart, drawn with plotters' SVG backend.
//!
//! One horizontal bar per subject, the reference on top, each labelled with its median time
//! and its ratio to ours; our subjects in blue, the peers in grey. plotters is built without
//! its font features: the SVG backend writes text as `<text>` elements that the viewer
//! renders, and lays it out with plotters' built-in width estimate, so no font file is read.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::bench::compare::Comparison;
use crate::bench::units::{self, Unit};

const WIDTH: u32 = 900;
const ROW: u32 = 34;
const FONT: &str = "sans-serif";
const REFERENCE: RGBColor = RGBColor(31, 84, 158);
const OURS: RGBColor = RGBColor(110, 160, 220);
const PEER: RGBColor = RGBColor(160, 160, 160);

/// The comparison as a complete SVG document.
pub(crate) fn svg(comparison: &Comparison) -> Result<String, String> {
    let mut document = String::new();
    draw(comparison, &mut document).map_err(|err| format!("chart {}: {err}", comparison.name))?;
    Ok(document)
}

fn draw(comparison: &Comparison, document: &mut String) -> Result<(), Box<dyn std::error::Error>> {
    let subjects = &comparison.subjects;
    let rows = subjects.len();
    let slowest = subjects
        .iter()
        .map(|subject| subject.median_ns)
        .fold(0.0, f64::max);
    let unit = Unit::for_ns(slowest);
    // Room right of the slowest bar for its label.
    let x_end = (slowest / unit.ns * 1.35).max(f64::MIN_POSITIVE);
    let longest_name = subjects
        .iter()
        .map(|subject| subject.name.chars().count())
        .max()
        .unwrap_or(0);
    // plotters estimates 14 px text at about 6.4 px a character.
    let name_width = (longest_name as u32 * 7 + 16).min(WIDTH / 2);
    let height = 110 + ROW * rows as u32;
    // Segments `0..=top`, one per subject (a lone subject gets an empty one above it: plotters
    // cannot make an axis of one segment).
    let top = rows.max(2) - 1;

    let root = SVGBackend::with_string(document, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&comparison.name, (FONT, 18))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(name_width)
        .build_cartesian_2d(0.0..x_end, (0..top).into_segmented())?;
    // Row 0 is drawn at the bottom; the reference (subjects[0]) belongs on top.
    let row_of = |index: usize| rows - 1 - index;
    let names: Vec<&str> = subjects.iter().map(|s| s.name.as_str()).collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(TRANSPARENT)
        .y_labels(rows)
        .y_label_style((FONT, 14))
        .x_label_style((FONT, 12))
        .y_label_formatter(&|value| match value {
            SegmentValue::CenterOf(row) if *row < rows => names[row_of(*row)].to_string(),
            _ => String::new(),
        })
        .x_label_formatter(&|value| {
            if *value == 0.0 {
                "0".into()
            } else {
                units::three_digits(*value)
            }
        })
        .x_desc(format!("median time per iteration ({})", unit.symbol))
        .axis_desc_style((FONT, 14))
        .draw()?;

    let reference = comparison.reference().map(|subject| subject.name.as_str());
    chart.draw_series(subjects.iter().enumerate().map(|(index, subject)| {
        let color = if Some(subject.name.as_str()) == reference {
            REFERENCE
        } else if subject.ours {
            OURS
        } else {
            PEER
        };
        let row = row_of(index);
        let mut bar = Rectangle::new(
            [
                (0.0, SegmentValue::Exact(row)),
                (
                    subject.median_ns / unit.ns,
                    // The top segment ends at the axis' end, not at a value.
                    if row == top {
                        SegmentValue::Last
                    } else {
                        SegmentValue::Exact(row + 1)
                    },
                ),
            ],
            color.filled(),
        );
        bar.set_margin(5, 5, 0, 0);
        bar
    }))?;
    let label_style = TextStyle::from((FONT, 13).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    chart.draw_series(subjects.iter().enumerate().map(|(index, subject)| {
        let mut label = units::time(subject.median_ns);
        if let Some(ratio) = comparison.ratio(subject) {
            label += &format!(" · {}", units::ratio(ratio));
        }
        if Some(subject.name.as_str()) == reference {
            label += " · ours";
        }
        Text::new(
            label,
            (
                // SVG collapses leading spaces: the gap to the bar is a step on the axis.
                subject.median_ns / unit.ns + x_end * 0.006,
                SegmentValue::CenterOf(row_of(index)),
            ),
            label_style.clone(),
        )
    }))?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::compare::Subject;

    #[test]
    fn the_chart_is_svg_with_every_subject_named() {
        let subject = |name: &str, median_ns: f64, ours: bool| Subject {
            name: name.into(),
            median_ns,
            ours,
        };
        let comparison = Comparison {
            name: "layer_per_request".into(),
            subjects: vec![
                subject("pdfpool_admission_layer", 310.0, true),
                subject("bare_service_floor", 21.0, false),
                subject("tower_concurrency_limit", 450.0, false),
            ],
            has_reference: true,
        };
        let document = svg(&comparison).unwrap();
        assert!(document.contains("<svg"), "{document}");
        for name in [
            "layer_per_request",
            "pdfpool_admission_layer",
            "bare_service_floor",
            "tower_concurrency_limit",
        ] {
            assert!(document.contains(name), "{name} missing from {document}");
        }
        assert!(document.contains("1.45×"), "the peer's ratio is drawn");
        assert!(document.contains("<rect"), "bars are drawn");
    }

    #[test]
    fn a_lone_subject_still_draws() {
        let comparison = Comparison {
            name: "alone".into(),
            subjects: vec![Subject {
                name: "pdfpool".into(),
                median_ns: 1_500.0,
                ours: true,
            }],
            has_reference: true,
        };
        let document = svg(&comparison).unwrap();
        assert!(
            document.contains("pdfpool") && document.contains("1.50 µs"),
            "{document}"
        );
    }
}
