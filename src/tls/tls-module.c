/* SPDX-License-Identifier: MIT */
/* The OpenSSL module's one exported symbol (tls-module.h). */
#include "tls-module.h"

__attribute__((visibility("default"))) const struct tls_module uexec_tls_module = {
	.abi = TLS_MODULE_ABI,
	.mem_init = tls_mem_init,
	.mem_done = tls_mem_done,
	.mem_feed = tls_mem_feed,
	.mem_step = tls_mem_step,
	.mem_ready = tls_mem_ready,
	.mem_write = tls_mem_write,
	.mem_shutdown = tls_mem_shutdown,
	.mem_pending = tls_mem_pending,
	.mem_take = tls_mem_take,
	.mem_error_text = tls_mem_error_text,
	.mem_set_peer = tls_mem_set_peer,
	.ctx_server_new = tls_ctx_server_new,
	.ctx_client_new = tls_ctx_client_new,
	.ctx_free = tls_ctx_free,
	.keccak = tls_keccak,
	.gcm_new = tls_gcm_new,
	.gcm_seal = tls_gcm_seal,
	.gcm_open = tls_gcm_open,
	.gcm_free = tls_gcm_free,
	.mitm_new = tls_mitm_new,
	.mitm_ctx = tls_mitm_ctx,
	.mitm_ca_pem = tls_mitm_ca_pem,
	.mitm_setup = tls_mitm_setup,
	.mitm_free = tls_mitm_free,
	.default_cert_file = tls_default_cert_file,
};
