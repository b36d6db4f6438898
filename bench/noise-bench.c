/* SPDX-License-Identifier: MIT */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/*
 * noise-bench: the pure crypto cost of the relay's Noise channel, in process,
 * with src/remote/codec's code (remote_codec_dep), no I/O and no server:
 *
 *   noise-bench [--iters N] [--mb M]
 *
 * Times keygen (one X25519 + one ML-KEM-768 pair), each handshake step on its
 * side (msg1 write = harness, msg1 read = executor, msg2 write = executor,
 * msg2 read = harness, split) and the AES-256-GCM transport of full 60 KiB
 * records per direction (encrypt = what the executor does to output,
 * decrypt = what the harness does). One JSON line per metric, as common.h.
 */
#include "common.h"

#include <errno.h>
#include <sys/types.h>

#include "channel.h"
#include "noise.h"
#include "records.h"

static void die(const char *what, long r)
{
	fprintf(stderr, "noise-bench: %s failed (%ld)\n", what, r);
	exit(1);
}

static double us(uint64_t ns, long n)
{
	return (double)ns / 1e3 / (double)n;
}

int main(int argc, char **argv)
{
	long iters = (long)opt_num(argc, argv, "--iters", 200);
	double mb = opt_num(argc, argv, "--mb", 256);
	static const char auth[] = "hka-abcdefghijklmnopqrstuvwxyz0123456789ABCD"; /* fake_relay's size */
	size_t plen;
	uint8_t *prologue = channel_prologue("env1", "reg-1-0123abcd", "0f8fad5b-d9cb-469f-a165-70867728950e",
					     &plen);
	if (!prologue)
		die("channel_prologue", -ENOMEM);

	struct noise_keypair exec_kp, harn_kp;
	struct noise_public exec_pub;
	uint64_t t_keygen = 0, t_w1 = 0, t_r1 = 0, t_w2 = 0, t_r2 = 0, t_split = 0;
	static uint8_t m1[NOISE_MAX_MESSAGE], m2[NOISE_MAX_MESSAGE], pl[8192];
	long r;

	if ((r = noise_keypair_generate(&exec_kp)) < 0)
		die("keygen", r);
	noise_keypair_public(&exec_kp, &exec_pub);
	for (long i = 0; i < iters; i++) {
		uint64_t t0 = mono_ns();
		if ((r = noise_keypair_generate(&harn_kp)) < 0)
			die("keygen", r);
		uint64_t t1 = mono_ns();
		struct noise_handshake *hi, *hr;
		if ((r = noise_handshake_new(&hi, NOISE_INITIATOR, &harn_kp, &exec_pub, prologue, plen,
					     NOISE_MSG2_DEFAULT)) < 0 ||
		    (r = noise_handshake_new(&hr, NOISE_RESPONDER, &exec_kp, NULL, prologue, plen,
					     NOISE_MSG2_DEFAULT)) < 0)
			die("handshake_new", r);
		uint64_t t2 = mono_ns();
		ssize_t n1 = noise_handshake_write(hi, (const uint8_t *)auth, sizeof(auth) - 1, m1, sizeof(m1));
		if (n1 < 0)
			die("msg1 write", (long)n1);
		uint64_t t3 = mono_ns();
		if ((r = (long)noise_handshake_read(hr, m1, (size_t)n1, pl, sizeof(pl))) != (long)sizeof(auth) - 1)
			die("msg1 read", r);
		uint64_t t4 = mono_ns();
		ssize_t n2 = noise_handshake_write(hr, NULL, 0, m2, sizeof(m2));
		if (n2 != NOISE_MSG2_BYTES)
			die("msg2 write", (long)n2);
		uint64_t t5 = mono_ns();
		if ((r = (long)noise_handshake_read(hi, m2, (size_t)n2, pl, sizeof(pl))) != 0)
			die("msg2 read", r);
		uint64_t t6 = mono_ns();
		struct noise_transport ti, tr;
		if ((r = noise_handshake_split(hi, &ti)) < 0 || (r = noise_handshake_split(hr, &tr)) < 0)
			die("split", r);
		uint64_t t7 = mono_ns();
		t_keygen += t1 - t0;
		t_w1 += t3 - t2;
		t_r1 += t4 - t3;
		t_w2 += t5 - t4;
		t_r2 += t6 - t5;
		t_split += t7 - t6;
		noise_handshake_free(hi);
		noise_handshake_free(hr);
		noise_transport_wipe(&ti);
		noise_transport_wipe(&tr);
		noise_keypair_wipe(&harn_kp);
	}
	emit("noise_keygen", "us", us(t_keygen, iters), (unsigned long long)iters);
	emit("noise_msg1_write", "us", us(t_w1, iters), (unsigned long long)iters);
	emit("noise_msg1_read", "us", us(t_r1, iters), (unsigned long long)iters);
	emit("noise_msg2_write", "us", us(t_w2, iters), (unsigned long long)iters);
	emit("noise_msg2_read", "us", us(t_r2, iters), (unsigned long long)iters);
	emit("noise_split_both", "us", us(t_split, iters), (unsigned long long)iters);
	/* per side, without the harness's per-connection keygen (uexec's static key is made once) */
	emit("noise_handshake_executor", "us", us(t_r1 + t_w2 + t_split / 2, iters), (unsigned long long)iters);
	emit("noise_handshake_harness", "us", us(t_w1 + t_r2 + t_split / 2, iters), (unsigned long long)iters);

	/* transport: full records, one direction each */
	struct noise_handshake *hi, *hr;
	struct noise_transport ti, tr;
	noise_keypair_generate(&harn_kp);
	if (noise_handshake_new(&hi, NOISE_INITIATOR, &harn_kp, &exec_pub, prologue, plen, NOISE_MSG2_DEFAULT) < 0 ||
	    noise_handshake_new(&hr, NOISE_RESPONDER, &exec_kp, NULL, prologue, plen, NOISE_MSG2_DEFAULT) < 0)
		die("handshake_new", -1);
	ssize_t n1 = noise_handshake_write(hi, NULL, 0, m1, sizeof(m1));
	if (n1 < 0 || noise_handshake_read(hr, m1, (size_t)n1, pl, sizeof(pl)) < 0)
		die("msg1", -1);
	ssize_t n2 = noise_handshake_write(hr, NULL, 0, m2, sizeof(m2));
	if (n2 < 0 || noise_handshake_read(hi, m2, (size_t)n2, pl, sizeof(pl)) < 0 ||
	    noise_handshake_split(hi, &ti) < 0 || noise_handshake_split(hr, &tr) < 0)
		die("msg2", -1);
	long nrec = (long)(mb * 1e6 / RELAY_RECORD_MAX) + 1;
	uint8_t *pt = malloc(RELAY_RECORD_MAX), *ct = malloc((size_t)nrec * (RELAY_RECORD_MAX + 16)),
		*out = malloc(RELAY_RECORD_MAX), *out2 = malloc(RELAY_RECORD_MAX + 16);
	if (!pt || !ct || !out || !out2)
		die("malloc", -ENOMEM);
	for (size_t i = 0; i < RELAY_RECORD_MAX; i++)
		pt[i] = (uint8_t)('A' + i % 64); /* base64-looking JSON */
	memset(ct, 0, (size_t)nrec * (RELAY_RECORD_MAX + 16)); /* page faults outside the timing */
	/*
	 * Encrypt is timed into one reused record buffer, as a sender seals each
	 * record into the frame it sends next; a copy of the same transport then
	 * stores the ciphertexts (untimed) that the decrypt side opens in order.
	 */
	struct noise_transport tr2 = tr;
	uint64_t t0 = mono_ns();
	for (long i = 0; i < nrec; i++) {
		ssize_t n = noise_encrypt(&tr2, pt, RELAY_RECORD_MAX, out2, RELAY_RECORD_MAX + 16);
		if (n != RELAY_RECORD_MAX + 16)
			die("encrypt", (long)n);
	}
	uint64_t t1 = mono_ns();
	for (long i = 0; i < nrec; i++) {
		ssize_t n = noise_encrypt(&tr, pt, RELAY_RECORD_MAX, ct + (size_t)i * (RELAY_RECORD_MAX + 16),
					  RELAY_RECORD_MAX + 16);
		if (n != RELAY_RECORD_MAX + 16)
			die("encrypt", (long)n);
	}
	uint64_t t1b = mono_ns();
	for (long i = 0; i < nrec; i++) {
		ssize_t n = noise_decrypt(&ti, ct + (size_t)i * (RELAY_RECORD_MAX + 16), RELAY_RECORD_MAX + 16, out,
					  RELAY_RECORD_MAX);
		if (n != RELAY_RECORD_MAX)
			die("decrypt", (long)n);
	}
	uint64_t t2 = mono_ns();
	noise_transport_wipe(&tr2);
	t2 = t1 + (t2 - t1b); /* decrypt time only */
	double bytes = (double)nrec * RELAY_RECORD_MAX;
	fprintf(stderr, "noise-bench: AEAD %s\n", noise_aead_impl());
	emit("aesgcm_encrypt_60k", "MB/s", bytes / ((double)(t1 - t0) / 1e9) / 1e6, (unsigned long long)nrec);
	emit("aesgcm_decrypt_60k", "MB/s", bytes / ((double)(t2 - t1) / 1e9) / 1e6, (unsigned long long)nrec);
	emit("aesgcm_encrypt_ms_per_mb", "ms", (double)(t1 - t0) / 1e6 / (bytes / 1e6), (unsigned long long)nrec);
	noise_handshake_free(hi);
	noise_handshake_free(hr);
	free(prologue);
	return 0;
}
