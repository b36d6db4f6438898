/* SPDX-License-Identifier: MIT */
/*
 * Remote mode across a live upgrade (docs/UPGRADE.md, "The relay link"):
 * the relay link and its Noise streams are not handed over. QUIESCE closes
 * them (the streams end, their carried connections with them, whose sessions
 * detach with their resume window), the registry calls too, and waits for
 * their sockets to be released; the new binary registers again with the
 * same environment id (a new registration, which the registry hands
 * harnesses as its newest) and the same identity: harnesses pin the
 * executor's static key across a reconnection (the Codex CLI fails its
 * recovery with "executor key changed during session recovery"), so the
 * identity, private keys included, travels in the SERVER record (the sealed
 * memfd only this pid holds). A harness reconnects and resumes its session
 * with `resumeSessionId`, reading what its processes printed meanwhile from
 * their retained output. If the upgrade does not go on, RESUME dials the
 * rendezvous again and harnesses resume the same way.
 */
#include <string.h>
#include <sys/types.h> /* noise.h's ssize_t */

#include "noise.h"
#include "remote.h"
#include "state.h"
#include "upgrade-internal.h"
#include "upgrade.h"

void upgrade_remote_quiesce(struct server *s, bool quiesced)
{
	remote_upgrade_pause(s, quiesced);
}

bool upgrade_remote_after_upgrade(void)
{
	return upgrade_restored_upgrades() > 0;
}

_Static_assert(sizeof(struct noise_keypair) == UPGRADE_RELAY_IDENTITY_BYTES,
	       "the relay identity's field is struct noise_keypair");

void upgrade_put_relay_identity(struct upgrade_writer *w, const struct server *s)
{
	uint8_t id[UPGRADE_RELAY_IDENTITY_BYTES];

	if (remote_upgrade_identity(s, id, sizeof(id)) == 0)
		upgrade_writer_bytes(w, UPGRADE_SERVER_RELAY_IDENTITY, id, sizeof(id));
	explicit_bzero(id, sizeof(id));
}

const void *upgrade_remote_identity(size_t *len)
{
	const void *id = upgrade_restored_relay_identity();

	*len = id ? UPGRADE_RELAY_IDENTITY_BYTES : 0;
	return id;
}
