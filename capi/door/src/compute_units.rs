//! Xilinx's way to pick compute units by kernel name (`vadd:{vadd_1,vadd_2}`: the kernel, a
//! colon, and the units' instance names in braces), which XRT's C++ API and its OpenCL both
//! take: the name split, and the choice checked against the units an image has.

/// The kernel and the compute units `name` picks; `None` for a plain kernel name; what is
/// wrong with a name that has a colon but not that form.
pub fn choice(name: &str) -> Result<Option<(&str, Vec<&str>)>, String> {
    let Some((kernel, choice)) = name.split_once(':') else {
        return Ok(None);
    };
    let inner = choice
        .strip_prefix('{')
        .and_then(|rest| rest.strip_suffix('}'))
        .ok_or_else(|| {
            format!(
                "'{}' is not a kernel name, nor a kernel with compute units \
                 ('kernel:{{unit,unit}}')",
                name.escape_debug()
            )
        })?;
    let units: Vec<&str> = inner.split(',').map(str::trim).collect();
    if kernel.is_empty() || units.iter().any(|unit| unit.is_empty()) {
        return Err(format!(
            "'{}': a kernel name and one or more compute-unit names are needed \
             ('kernel:{{unit,unit}}')",
            name.escape_debug()
        ));
    }
    Ok(Some((kernel, units)))
}

/// Checks that each of `units` is one of `of_kernel`, the compute units `kernel` has in the
/// image `image` names; what is wrong, naming the units the kernel has. The choice is checked
/// only: runs go to the kernel's units as the device schedules them.
pub fn check(image: &str, kernel: &str, units: &[&str], of_kernel: &[&str]) -> Result<(), String> {
    match units.iter().find(|unit| !of_kernel.contains(unit)) {
        None => Ok(()),
        Some(unit) => Err(format!(
            "{image} has no compute unit '{}' of kernel '{}' (its units: {})",
            unit.escape_debug(),
            kernel.escape_debug(),
            if of_kernel.is_empty() {
                "none".to_string()
            } else {
                of_kernel.join(", ")
            }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_a_kernel_and_units_in_braces() {
        assert_eq!(choice("vadd"), Ok(None));
        assert_eq!(choice("vadd:{vadd_1}"), Ok(Some(("vadd", vec!["vadd_1"]))));
        assert_eq!(
            choice("vadd:{vadd_1, vadd_2}"),
            Ok(Some(("vadd", vec!["vadd_1", "vadd_2"])))
        );
        for wrong in [
            "vadd:vadd_1",
            "vadd:{}",
            ":{vadd_1}",
            "vadd:{vadd_1,}",
            "vadd:{vadd_1",
        ] {
            assert!(choice(wrong).is_err(), "{wrong}");
        }
    }

    #[test]
    fn a_unit_the_kernel_lacks_is_named_with_the_units_it_has() {
        assert_eq!(
            check("the xclbin", "vadd", &["vadd_1"], &["vadd_1", "vadd_2"]),
            Ok(())
        );
        let why = check("the xclbin", "vadd", &["vadd_9"], &["vadd_1", "vadd_2"]).unwrap_err();
        assert!(
            why.contains("no compute unit 'vadd_9' of kernel 'vadd'")
                && why.contains("its units: vadd_1, vadd_2"),
            "{why}"
        );
        assert!(
            check("the xclbin", "mmult", &["a"], &[])
                .unwrap_err()
                .contains("none")
        );
    }
}
