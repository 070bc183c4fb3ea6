"""``transpiler.details.ufind``: a union-find over a list of elements."""


class UnionFind:
    """Disjoint sets over ``elements``: ``union(x, y)`` joins their sets, ``is_connected(x, y)`` asks."""

    def __init__(self, elements=None):
        self._parents = []
        self._index = {}
        for element in elements or ():
            self._index[element] = len(self._parents)
            self._parents.append(len(self._parents))

    def find(self, x):
        """The root index of ``x``'s set, or -1 for an element it was not given."""
        if x not in self._index:
            return -1
        i = self._index[x]
        while i != self._parents[i]:
            self._parents[i] = self._parents[self._parents[i]]
            i = self._parents[i]
        return i

    def union(self, x, y):
        x_root, y_root = self.find(x), self.find(y)
        if x_root != y_root and x_root >= 0 and y_root >= 0:
            self._parents[x_root] = y_root

    def is_connected(self, x, y):
        return self.find(x) >= 0 and self.find(x) == self.find(y)
