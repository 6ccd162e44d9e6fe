# Sourced by nginx's auto/make after `config`: appends to objs/Makefile the rules that build
# $SIGNIN_LIB (core and glue, one archive) with CMake, and makes the module (or the nginx binary,
# with --add-module) depend on it.
#
# - The CMake build directory is inside nginx's objs directory, so `make clean` removes it and the
#   checkout is never written to (one checkout can serve several nginx trees).
# - CMake is (re)configured when objs/Makefile is newer than its stamp, i.e. after every nginx
#   ./configure, with that build's $(CFLAGS) and $(ALL_INCS); relative include paths are resolved
#   against the directory make runs in (the nginx tree).
# - The archive rule always runs (signin_force): CMake's own Makefiles know which sources and
#   headers changed, and leave the archive untouched when nothing did, so make relinks the module
#   only when the archive really changed. $(MAKE) shares make's jobserver (-j) with the sub-build.

cat << END                                                   >> $NGX_MAKEFILE

$SIGNIN_BUILD/configured:	$NGX_MAKEFILE
	$SIGNIN_CMAKE -S $ngx_addon_dir -B $SIGNIN_BUILD -G "Unix Makefiles" --log-level=WARNING \\
		-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSIGNIN_SANITIZE=$SIGNIN_SANITIZE_FLAG \\
		-DSIGNIN_NGINX_ROOT="\$\$PWD" '-DSIGNIN_NGINX_CFLAGS=\$(CFLAGS)' \\
		'-DSIGNIN_NGINX_INCS=\$(ALL_INCS)'
	touch \$@

$SIGNIN_LIB:	$SIGNIN_BUILD/configured signin_force
	\$(MAKE) -C $SIGNIN_BUILD ngx_signin

signin_force:

END

if [ -n "$SIGNIN_LINKED" ]; then
    cat << END                                               >> $NGX_MAKEFILE
$SIGNIN_LINKED:	$SIGNIN_LIB

END
fi
