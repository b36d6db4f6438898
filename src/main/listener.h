/* SPDX-License-Identifier: MIT */
/* The listener (listener.c): bind the --listen URL, accept on the ring. */
#pragma once

struct server;

/* Binds s->cfg.listen, guards its port, prints the bound URL; 0 or -errno (logged). */
int server_listen_on(struct server *s);
/* Arms the multishot accept on s->listen_fd. */
void server_arm_accept(struct server *s);
/* Ends a pause of accept (out of descriptors): a connection ended or the timer fired. */
void server_accept_resume(struct server *s);
