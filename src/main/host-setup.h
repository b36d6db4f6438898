/* SPDX-License-Identifier: MIT */
/* Start-up's look at the host (host-setup.c): sandbox mechanisms, cgroups. */
#pragma once

struct config;
struct server;

/* Probes the host once and tells the operator what sandboxed requests will get; 0 or -errno. */
int server_setup_sandbox(struct server *s);
/* Probes and logs the cgroup layout, starts the supervisor (before any thread). */
void server_setup_cgroups(struct server *s);
/*
 * The server's own files (secrets, audit log, --config) hidden from sandboxes
 * and file requests, as c names them: at start and after each SIGHUP.
 */
int server_hide_files(struct server *s, const struct config *c);
