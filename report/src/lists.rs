//! Many short lists stored end to end: a profile's stacks, each a short list of frames, held
//! in one allocation rather than one each (a list of its own costs a header, an allocation and
//! the room it grew into).

use std::ops::Index;

/// Lists of `T`; `lists[i]` is the `i`th list pushed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lists<T> {
    /// Where each list starts in `items`, then where the last one ends.
    bounds: Vec<usize>,
    items: Vec<T>,
}

impl<T> Default for Lists<T> {
    fn default() -> Self {
        Lists { bounds: vec![0], items: Vec::new() }
    }
}

impl<T> Lists<T> {
    /// No lists, with room for `lists` of them holding `items` in all: lists that grew their
    /// room as they came would leave behind each smaller room they grew out of.
    pub fn with_capacity(lists: usize, items: usize) -> Self {
        let mut bounds = Vec::with_capacity(lists + 1);
        bounds.push(0);
        Lists { bounds, items: Vec::with_capacity(items) }
    }

    /// Adds a list after the others.
    pub fn push(&mut self, list: impl IntoIterator<Item = T>) {
        self.items.extend(list);
        self.bounds.push(self.items.len());
    }

    /// The number of lists.
    pub fn len(&self) -> usize {
        self.bounds.len() - 1
    }

    /// Whether there are no lists.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// List `i`, if there are that many.
    pub fn get(&self, i: usize) -> Option<&[T]> {
        let (&start, &end) = (self.bounds.get(i)?, self.bounds.get(i.checked_add(1)?)?);
        Some(&self.items[start..end])
    }

    /// The lists in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[T]> + '_ {
        self.bounds.windows(2).map(|w| &self.items[w[0]..w[1]])
    }

    /// Every item of every list, in order.
    pub fn items(&self) -> &[T] {
        &self.items
    }

    /// Gives back the room no list uses.
    pub fn shrink_to_fit(&mut self) {
        self.bounds.shrink_to_fit();
        self.items.shrink_to_fit();
    }
}

impl<T> Index<usize> for Lists<T> {
    type Output = [T];

    fn index(&self, i: usize) -> &[T] {
        &self.items[self.bounds[i]..self.bounds[i + 1]]
    }
}

#[cfg(test)]
mod tests {
    use super::Lists;

    #[test]
    fn lists_read_back_as_pushed() {
        let mut l: Lists<u32> = Lists::default();
        assert!(l.is_empty());
        assert_eq!(l.get(0), None);
        l.push([3, 1, 2]);
        l.push([]);
        l.push([7]);
        assert_eq!(l.len(), 3);
        assert_eq!(&l[0], &[3, 1, 2]);
        assert!(l[1].is_empty());
        assert_eq!(l.get(2), Some(&[7][..]));
        assert_eq!(l.get(3), None);
        assert_eq!(l.get(usize::MAX), None);
        let back: Vec<Vec<u32>> = l.iter().map(<[u32]>::to_vec).collect();
        assert_eq!(back, vec![vec![3, 1, 2], vec![], vec![7]]);
        assert_eq!(l.items(), &[3, 1, 2, 7]);
        let mut again = Lists::with_capacity(3, 4);
        back.into_iter().for_each(|list| again.push(list));
        assert_eq!(again, l);
    }
}
