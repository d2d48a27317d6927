//! SVG charts for `docs/results.md`, drawn with plotters (SVG backend only:
//! no system fonts, the viewer renders the text).
//!
//! A [`Chart`] is plain data (categories and named series), so the
//! experiments decide what to plot and this module only draws it: grouped
//! bars for per-policy counts, lines over categories for per-concurrency
//! throughput and latency.

use anyhow::{Result, anyhow, bail};
use plotters::coord::combinators::IntoLogRange;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};

/// How a chart draws its series.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// One group of bars per category, one bar per series.
    Bars,
    /// One line per series across the categories, on a logarithmic y axis.
    LogLines,
}

/// One chart: what it shows and the numbers.
#[derive(Clone, Debug)]
pub struct Chart {
    /// File name without the directory, e.g. `race.svg`.
    pub file: String,
    /// Caption.
    pub title: String,
    /// What the y axis counts.
    pub y: String,
    /// What the x axis holds (its categories' common name).
    pub x: String,
    /// How it is drawn.
    pub kind: Kind,
    /// The x categories, in order.
    pub categories: Vec<String>,
    /// Named series, one value per category.
    pub series: Vec<(String, Vec<f64>)>,
}

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// The chart on `root` with this y range and y label area: the caption,
/// margins, axes and mesh every chart shares.
macro_rules! frame {
    ($chart:expr, $root:expr, $y:expr, $y_area:expr) => {{
        let mut c = ChartBuilder::on($root)
            .caption(&$chart.title, ("sans-serif", 20))
            .margin(14)
            .x_label_area_size(40)
            .y_label_area_size($y_area)
            .build_cartesian_2d($chart.x_axis(), $y)?;
        c.configure_mesh()
            .disable_x_mesh()
            .x_desc(&$chart.x)
            .y_desc(&$chart.y)
            .x_label_formatter(&|x| $chart.label_of(*x))
            .y_label_formatter(&|y| short_number(*y))
            .label_style(("sans-serif", 13))
            .draw()?;
        c
    }};
}

impl Chart {
    /// Check the shape: at least one category and series, every series one
    /// finite, non-negative value per category (positive for log lines).
    pub fn validate(&self) -> Result<()> {
        if self.categories.is_empty() || self.series.is_empty() {
            bail!("chart {}: no categories or no series", self.file);
        }
        for (name, values) in &self.series {
            if values.len() != self.categories.len() {
                bail!("chart {}: series {name:?} has {} values for {} categories", self.file, values.len(), self.categories.len());
            }
            if let Some(v) = values.iter().find(|v| !v.is_finite() || **v < 0.0 || (self.kind == Kind::LogLines && **v <= 0.0)) {
                bail!("chart {}: series {name:?} holds {v}, which this chart cannot draw", self.file);
            }
        }
        Ok(())
    }

    /// Draw into `dir/<file>`; the path written.
    pub fn render(&self, dir: &Path) -> Result<PathBuf> {
        self.validate()?;
        std::fs::create_dir_all(dir)?;
        let path = dir.join(&self.file);
        let err = |e: &dyn std::fmt::Display| anyhow!("drawing {}: {e}", path.display());
        {
            let root = SVGBackend::new(&path, (900, 460)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| err(&e))?;
            match self.kind {
                Kind::Bars => self.bars(&root).map_err(|e| err(&e))?,
                Kind::LogLines => self.lines(&root).map_err(|e| err(&e))?,
            }
            root.present().map_err(|e| err(&e))?;
        }
        Ok(path)
    }

    /// The x axis: one unit per category, a label at each centre.
    fn x_axis(&self) -> Categories {
        Categories(RangedCoordf64::from(0.0..self.categories.len() as f64))
    }

    fn label_of(&self, x: f64) -> String {
        self.categories.get(x.max(0.0) as usize).cloned().unwrap_or_default()
    }

    fn bars<DB: DrawingBackend>(&self, root: &DrawingArea<DB, plotters::coord::Shift>) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        let top = self.series.iter().flat_map(|(_, v)| v.iter().copied()).fold(0.0, f64::max);
        // Headroom above the tallest bar for the value labels and the legend.
        let top = if top > 0.0 { top * 1.45 } else { 1.0 };
        let mut chart = frame!(self, root, 0.0..top, 64);
        let width = 0.8 / self.series.len() as f64;
        for (j, (name, values)) in self.series.iter().enumerate() {
            let color = PALETTE[j % PALETTE.len()];
            let left = move |i: usize| i as f64 + 0.1 + j as f64 * width;
            chart
                .draw_series(values.iter().enumerate().map(|(i, &v)| Rectangle::new([(left(i), 0.0), (left(i) + width * 0.92, v)], color.filled())))?
                .label(name.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
            // The value above each bar, so a zero is visibly a zero.
            chart.draw_series(values.iter().enumerate().map(|(i, &v)| {
                Text::new(short_number(v), (left(i) + width * 0.46, v), ("sans-serif", 11).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Bottom)))
            }))?;
        }
        chart.configure_series_labels().position(SeriesLabelPosition::UpperRight).background_style(WHITE.mix(0.85)).border_style(BLACK).draw()?;
        Ok(())
    }

    fn lines<DB: DrawingBackend>(&self, root: &DrawingArea<DB, plotters::coord::Shift>) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        let values = || self.series.iter().flat_map(|(_, v)| v.iter().copied());
        let (lo, hi) = (values().fold(f64::MAX, f64::min), values().fold(0.0, f64::max));
        let mut chart = frame!(self, root, (lo / 2.0..hi * 2.0).log_scale(), 72);
        for (j, (name, values)) in self.series.iter().enumerate() {
            let color = PALETTE[j % PALETTE.len()];
            let points: Vec<(f64, f64)> = values.iter().enumerate().map(|(i, &v)| (i as f64 + 0.5, v)).collect();
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
        }
        chart.configure_series_labels().position(SeriesLabelPosition::LowerRight).background_style(WHITE.mix(0.85)).border_style(BLACK).draw()?;
        Ok(())
    }
}

/// An x axis of categories: `[i, i + 1)` is category `i`, labelled at its centre.
struct Categories(RangedCoordf64);

impl Ranged for Categories {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.0.map(value, limit)
    }

    fn key_points<Hint: plotters::coord::ranged1d::KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        let n = self.0.range().end as usize;
        (0..n).map(|i| i as f64 + 0.5).collect()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.0.range()
    }
}

/// 1234 → "1234", 12345.6 → "12.3k", 0.25 → "0.25".
fn short_number(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.1}k", v / 1000.0)
    } else if v >= 10.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(kind: Kind, series: Vec<(String, Vec<f64>)>) -> Chart {
        Chart {
            file: "t.svg".into(),
            title: "Conflicts per policy".into(),
            y: "count".into(),
            x: "policy".into(),
            kind,
            categories: vec!["re-apply".into(), "resend".into()],
            series,
        }
    }

    #[test]
    fn bars_and_lines_render_every_category_and_series_name() {
        let dir = std::env::temp_dir().join(format!("cairn-charts-{}", std::process::id()));
        for kind in [Kind::Bars, Kind::LogLines] {
            let c = chart(kind, vec![("lost".into(), vec![1.0, 27.0]), ("conflicts".into(), vec![51.0, 49.0])]);
            let svg = std::fs::read_to_string(c.render(&dir).unwrap()).unwrap();
            assert!(svg.starts_with("<svg"), "{kind:?}: not an SVG");
            for text in ["Conflicts per policy", "re-apply", "resend", "lost", "conflicts"] {
                assert!(svg.contains(text), "{kind:?}: {text:?} missing from the SVG");
            }
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_series_of_the_wrong_length_or_a_zero_on_a_log_axis_is_refused() {
        let short = chart(Kind::Bars, vec![("lost".into(), vec![1.0])]);
        assert!(short.validate().unwrap_err().to_string().contains("1 values for 2 categories"));
        let zero = chart(Kind::LogLines, vec![("calls/s".into(), vec![0.0, 3.0])]);
        assert!(zero.validate().unwrap_err().to_string().contains("cannot draw"));
        assert!(chart(Kind::Bars, vec![("zeros".into(), vec![0.0, 0.0])]).validate().is_ok());
    }
}
