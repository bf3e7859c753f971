//! Structural (2.1/2.2) decoding: pages become [`levels::LevelStream`]s,
//! leaf columns are [`unravel::unravel`]ed into Arrow structure, and
//! [`to_arrow::assemble`] builds nested arrays from leaf columns.

pub mod blob;
pub mod compressive;
pub mod datablock;
pub(crate) mod direct;
pub mod levels;
pub mod pages;
pub mod sink;
pub mod to_arrow;
pub mod unravel;
