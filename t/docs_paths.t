# docs/architecture.md describes the tree as it is: every path it names exists. A path is a word
# that starts with one of the repository's top folders (src/core/engine.cpp, include/signin/,
# src/ngx/*/ngx_http_*_module.cpp, a pattern matching at least one file), a link of the page
# (../README.md), or a file name in backquotes (`signin_api.cpp`, found anywhere in the tree).
# Renaming or removing a file without the page following fails here. No nginx is needed.
use strict; use warnings;
use Test::More;
use File::Find;
use FindBin;

my $root = "$FindBin::Bin/..";
my $page = 'docs/architecture.md';
open my $fh, '<', "$root/$page" or die "$page: $!";
my $text = do { local $/; <$fh> };
close $fh;

my $top = qr{(?:src|include|t|bench|fuzz|docs|cmake|debian|examples)/};
my %paths;
$paths{$1} = 1 while $text =~ m{(?<![\w./-])($top[\w./*+-]*)}g;
$paths{"docs/$1"} = 1 while $text =~ m{\]\(((?!https?:|#)[^)#\s]+)(?:#[^)]*)?\)}g;
my %names;
$names{$1} = 1 while $text =~ m{`([\w.+-]+\.(?:cpp|h|hpp|t|md|cmake|html|js|css|yaml|conf|json|sh|mjs))`}g;

ok scalar(keys %paths) > 30, "$page names the tree's paths (" . scalar(keys %paths) . ')';
for my $path (sort keys %paths) {
    (my $clean = $path) =~ s{[.,:;]+$}{};
    my @found = grep { -e $_ } glob("$root/$clean");
    ok @found, "$page: $clean exists";
}

my %in_tree;
find({ no_chdir => 1, wanted => sub {
    $File::Find::prune = 1 if m{/(?:build|node_modules|\.git)$};
    $in_tree{ (m{([^/]+)$})[0] } = 1 if -f $_;
} }, $root);
ok $in_tree{$_}, "$page: a file named $_ exists" for sort keys %names;

done_testing;
