-- Insert-and-index churn for the sqlite3 CLI, fed on standard input after a line
-- `.parameter set @rows N` (bench.py writes it; N is the row count).  An in-memory database
-- keeps the disk out of the timing: every page lives in the page cache, allocated with malloc.
-- Rows come from a recursive CTE so that the script stays small; names are a permutation of
-- the row ids (7919 is prime and coprime to the counts used) so the index builds are not
-- in insertion order.
CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT, grp INTEGER, payload TEXT);
WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < @rows)
INSERT INTO item
  SELECT x, printf('name-%09d', (x * 7919) % @rows), x % 997, printf('%.*c', 20 + x % 60, 'p')
  FROM n;
CREATE INDEX item_name ON item(name);
CREATE INDEX item_grp ON item(grp, payload);
UPDATE item SET payload = payload || '-v2' WHERE grp % 3 = 0;
DELETE FROM item WHERE grp % 5 = 0;
SELECT count(*), sum(length(payload)), max(name) FROM item;
