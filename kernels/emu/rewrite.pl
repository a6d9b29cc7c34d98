#!/usr/bin/perl
# The two edits that let g++ compile a kernels/*.cu file under the CUDA emulation
# (kernels/emu/emu.h), printed to stdout; the source itself is not changed:
#   k<T><<<grid, block, smem, st>>>(args)  ->  sl_emu_launch(sl_emu_kernel_name<k<T>>(), k<T>, grid, block, smem, st)(args)
#   extern __shared__ [__align__(n)] T name[];  ->  T *name = reinterpret_cast<T *>(sl_emu_dynamic_smem());
#   __shared__ T a[N], b;  ->  the same, then SL_EMU_SHARED_REGISTER(a); SL_EMU_SHARED_REGISTER(b);
# Usage: kernels/emu/rewrite.pl FILE.cu > FILE.cc
use strict;
use warnings;

local $/;
my $src = <>;
# the newlines a launch spans are kept after it, so line numbers stay those of the source
$src =~ s{([A-Za-z_]\w*(?:<[^<>;()]*>)?)(\s*)<<<(.*?)>>>(\s*)\(}
         {"sl_emu_launch(sl_emu_kernel_name<$1>(), $1, $3)(" . ("\n" x (($2 . $4) =~ tr/\n//))}gse;
$src =~ s{extern\s+__shared__\s+(?:__align__\(\s*\d+\s*\)\s+)?([A-Za-z_][\w ]*?)\s+(\w+)\s*\[\s*\]\s*;}
         {$1 *$2 = reinterpret_cast<$1 *>(sl_emu_dynamic_smem());}g;
# static shared memory: each variable also registers itself, once, so that the runtime can
# refill it with 0xff bytes at every block start (g++ ignores section attributes on the
# static locals of templates, so no linker section can collect them)
$src =~ s{^(\s*)(__shared__\s+(?:__align__\(\s*\d+\s*\)\s+)?[A-Za-z_][\w:]*\s+)([^;()]+);}
         {my ($ind, $head, $decls) = ($1, $2, $3);
          my @names = map { /^\s*(\w+)/ ? $1 : die "rewrite.pl: cannot read '$_'\n" }
                      split /,/, $decls;
          "$ind$head$decls;" . join("", map { " SL_EMU_SHARED_REGISTER($_);" } @names)}gme;
die "rewrite.pl: a '<<<' left that is not a launch of the form name<<<...>>>(\n" if $src =~ /<<</;
die "rewrite.pl: an 'extern __shared__' left in an unexpected form\n" if $src =~ /extern\s+__shared__/;
print "#line 1 \"$ARGV\"\n", $src;
