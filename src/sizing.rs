//! Sizing: where an output file ends — the file-size policy of the README ("files follow the
//! target"), as a function of plain figures, apart from the writer that applies it.
//!
//! The bytes still to come are estimated from the input left and the output-per-input ratio
//! measured so far. If they all fit within the target plus one row group (the allowed
//! overshoot) the open file takes them; otherwise the rest is cut into the fewest files of at
//! most the target, and the open file ends at its equal share, so a tuple never ends in full
//! files and a small tail. A file is closed when one more row would bring it nearer its share
//! than it is (and never before it holds a row).
//!
//! Memory: nothing.

/// Where the open file should end, in bytes, if before the input does: `open` bytes written to
/// it (its open row group by estimate), `rest` the output still to come by estimate, `target`
/// the target file size, `row_group` the bytes of a row group.
pub fn share(open: f64, rest: f64, target: f64, row_group: f64) -> Option<f64> {
    let all = open + rest;
    if all <= target + row_group {
        return None;
    }
    let files = (all / target).ceil().max(1.0);
    Some((all / files).min(target))
}

/// Whether a file of `open` bytes holding `rows` rows is at its `share`: one more row of
/// `per_row` bytes would take it further from it than it is.
pub fn full(open: f64, rows: u64, per_row: f64, share: Option<f64>) -> bool {
    match share {
        Some(share) => rows > 0 && open + per_row / 2.0 >= share,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: f64 = 100.0;

    #[test]
    fn what_fits_the_target_and_a_row_group_stays_in_one_file() {
        assert_eq!(share(0.0, 100.0, T, 0.0), None);
        assert_eq!(share(40.0, 70.0, T, 10.0), None, "110 <= target + one row group");
        assert_eq!(share(40.0, 71.0, T, 10.0), Some(111.0 / 2.0));
    }

    #[test]
    fn the_rest_is_cut_into_the_fewest_equal_files_of_at_most_the_target() {
        // 250 bytes: three files of ~83, not two full ones and a tail of 50
        assert_eq!(share(0.0, 250.0, T, 0.0), Some(250.0 / 3.0));
        // exactly two targets: two full files
        assert_eq!(share(0.0, 200.0, T, 0.0), Some(100.0));
        for rest in [101.0, 150.0, 199.0, 1_000.0, 12_345.0] {
            let s = share(0.0, rest, T, 0.0).unwrap();
            assert!(s <= T && s > T / 2.0, "{rest}: share {s}");
        }
    }

    #[test]
    fn a_file_closes_nearest_its_share_and_never_empty() {
        assert!(!full(0.0, 0, 10.0, Some(1.0)), "an empty file is never full, whatever its footer weighs");
        assert!(!full(44.0, 3, 10.0, Some(50.0)), "one more row brings it nearer");
        assert!(full(45.0, 3, 10.0, Some(50.0)));
        assert!(!full(1e9, 3, 10.0, None), "no share: the file takes the rest");
    }
}
