//! The operator's alternatives for a provision ("if unavailable, try…"): regions or sizes
//! in the order they were ticked, at most [`MAX_ALTERNATIVES`], never the first choice.

/// Most alternatives of each kind the control plane accepts.
pub const MAX_ALTERNATIVES: usize = 4;

/// `list` with `id` ticked (appended) or unticked (removed). A tick beyond the limit is
/// ignored.
pub fn toggle(list: &[String], id: &str) -> Vec<String> {
    if list.iter().any(|x| x == id) {
        return list.iter().filter(|x| *x != id).cloned().collect();
    }
    let mut out = list.to_vec();
    if out.len() < MAX_ALTERNATIVES {
        out.push(id.to_owned());
    }
    out
}

/// `list` without `first` (the first choice changed to one of the alternatives).
pub fn without(list: &[String], first: &str) -> Vec<String> {
    list.iter().filter(|x| *x != first).cloned().collect()
}

/// "nbg1, then hel1": the order the alternatives are tried in.
pub fn order_text(list: &[String]) -> String {
    list.join(", then ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn ticking_appends_in_order_and_unticking_removes() {
        let list = toggle(&toggle(&[], "nbg1"), "hel1");
        assert_eq!(list, v(&["nbg1", "hel1"]));
        assert_eq!(toggle(&list, "nbg1"), v(&["hel1"]));
    }

    #[test]
    fn no_more_than_the_limit_can_be_ticked() {
        let full = v(&["a", "b", "c", "d"]);
        assert_eq!(toggle(&full, "e"), full);
    }

    #[test]
    fn the_first_choice_is_never_an_alternative_and_the_order_reads_as_a_sentence() {
        assert_eq!(without(&v(&["a", "b"]), "a"), v(&["b"]));
        assert_eq!(order_text(&v(&["nbg1", "hel1"])), "nbg1, then hel1");
    }
}
