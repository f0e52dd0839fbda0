/// One permission a credential's verification checked: the cloud's own name for it
/// (`ec2:RunInstances`, `compute.instances.create`, a token scope) and whether the
/// credential was found to hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionCheck {
    pub name: String,
    pub granted: bool,
}

impl PermissionCheck {
    /// The checks of `names`, each granted unless it is in `missing`.
    pub fn of<'a>(names: impl IntoIterator<Item = &'a str>, missing: &[&str]) -> Vec<Self> {
        names
            .into_iter()
            .map(|name| PermissionCheck {
                name: name.to_owned(),
                granted: !missing.contains(&name),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_is_granted_unless_missing() {
        let checks = PermissionCheck::of(["a", "b"], &["b"]);
        assert_eq!(
            checks,
            [
                PermissionCheck {
                    name: "a".into(),
                    granted: true
                },
                PermissionCheck {
                    name: "b".into(),
                    granted: false
                }
            ]
        );
    }
}
