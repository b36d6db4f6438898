/* SPDX-License-Identifier: MIT */
/*
 * The OpenSSL module's loader (tls-load.c): the functions of tls-mem.h and
 * tls-ossl.h load uexec-openssl.so on first use.
 */
#pragma once

/*
 * Finds the module (next to the binary, else in its install directory) and
 * keeps an fd to it, which the load goes through; the first call decides,
 * later ones return its result. Called at start. 0 or -errno (-ENOENT when
 * an earlier look failed). Logs nothing: a server that never needs OpenSSL
 * does not miss it.
 */
int tls_module_open(void);
