# Keeps 100 strings of 1000 bytes per turn and calls getppid once per turn (Perl_pp_getppid:
# the epoch function).  Prints how many it kept and the size perl allocated for one's buffer.
use B;
my @keep;
for my $t (1 .. ($ARGV[0] // 200)) {
    my $x = getppid();
    push @keep, "x" x 1000 for 1 .. 100;
}
print scalar(@keep), " ", B::svref_2object(\$keep[0])->LEN, "\n";
