/* SPDX-License-Identifier: MIT */
/*
 * Remote mode across a live upgrade (docs/UPGRADE.md, "The relay link"):
 * the relay link and its Noise streams are not handed over. QUIESCE closes
 * them (the streams end, their carried connections with them, whose sessions
 * detach with their resume window), the registry calls too, and waits for
 * their sockets to be released; the new binary registers again with the
 * same environment id (a new identity and registration: the registry hands
 * harnesses its newest one). A harness reconnects and resumes its session
 * with `resumeSessionId`, reading what its processes printed meanwhile from
 * their retained output. If the upgrade does not go on, RESUME dials the
 * rendezvous again and harnesses resume the same way.
 */
#include "remote.h"
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
