<?php
// Keeps 100 strings of 1000 bytes per turn and calls memory_get_usage once per turn
// (zend_memory_usage: the epoch function); argv[2] microseconds of sleep per turn.
$keep = [];
$turns = (int)($argv[1] ?? 200);
$nap = (int)($argv[2] ?? 0);
for ($t = 0; $t < $turns; $t++) {
    $x = memory_get_usage();
    if ($nap) usleep($nap);
    for ($i = 0; $i < 100; $i++) $keep[] = str_repeat("x", 1000);
}
echo count($keep), "\n";
