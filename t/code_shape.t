# The code keeps a shape a newcomer can read, checked without building anything:
#  - no file of the nginx glue (src/ngx/) is over 600 lines;
#  - no function is over 80 lines outside src/ngx/ (the parts, their headers, signin-admin, the
#    unit tests, fuzz/ and bench/); in src/ngx/ one over 80 says why in the comment right above it,
#    in words that include "in one piece" (a phase handler whose order is the security argument);
#  - no comment cites a section of the design or spec documents the project was first written
#    from: they are not in the repository, so a reason is given in words.
# Functions are measured by t/tools/function_lengths (its header says what it counts).
use strict; use warnings;
use Test::More;
use File::Find;
use FindBin;

my $root = "$FindBin::Bin/..";
chdir $root or die "$root: $!";

sub files_under {
    my ($re, @dirs) = @_;
    my @out;
    find({ no_chdir => 1, wanted => sub {
        $File::Find::prune = 1 if m{/(?:build|node_modules|corpus)$};
        push @out, $_ if -f $_ && $_ =~ $re;
    } }, grep { -e } @dirs);
    return sort @out;
}

# ---------------------------------------------------------------- glue files
my @glue = files_under(qr/\.(?:cpp|h)$/, 'src/ngx');
ok @glue > 30, 'the glue files were found (' . scalar(@glue) . ')';
for my $file (@glue) {
    open my $fh, '<', $file or die "$file: $!";
    my $lines = () = <$fh>;
    ok $lines <= 600, "$file has $lines lines (at most 600)";
}

# ---------------------------------------------------------------- functions
my @cxx = files_under(qr/\.(?:cpp|cc|h|hpp)$/, qw(src include t/unit fuzz bench));
my @measured = `$^X t/tools/function_lengths @cxx`;
is $?, 0, 't/tools/function_lengths ran';
ok @measured > 500, 'functions were measured (' . scalar(@measured) . ')';
my %text;
for my $m (@measured) {
    my ($lines, $file, $line, $name) = $m =~ /^(\d+) (\S+):(\d+) (\S+)/ or next;
    next if $lines <= 80;
    if ($file !~ m{^src/ngx/}) {
        fail "$file:$line $name is $lines lines (at most 80 outside src/ngx)";
        next;
    }
    $text{$file} //= do { open my $fh, '<', $file or die; [<$fh>] };
    my $above = '';
    for (my $i = $line - 2; $i >= 0 && $text{$file}[$i] =~ m{^\s*//}; $i--) { $above = $text{$file}[$i] . $above }
    like $above, qr/in\s+(?:\/\/\s*)?one\s+(?:\/\/\s*)?piece/,
        "$file:$line $name is $lines lines, and the comment above it says why it is kept in one piece";
}

# ---------------------------------------------------------------- no citations of absent documents
my $cited = join '|', map { quotemeta } ('DES' . 'IGN §', 'SP' . 'EC §');
my @texts = (files_under(qr/./, qw(src include docs t config)), 'build.sh', 'README.md');
my @found;
for my $file (@texts) {
    next if $file =~ m{^t/node_modules/};
    open my $fh, '<', $file or next;
    while (my $l = <$fh>) { push @found, "$file:$.: $l" if $l =~ /$cited/ }
}
is_deeply \@found, [], 'no comment cites a section of the design or spec documents' or diag @found;

done_testing;
