/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers of the filesystem methods.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "file-uri.h"
#include "fs.h"
#include "log.h"
#include "fs-sandbox.h"
#include "macro.h"
#include "rpc-fs.h"
#include "rpc.h"

int fs_param_path(struct conn *c, json_t *id, json_t *v, char **ret_path)
{
	char *msg = NULL;
	int r;

	r = file_uri_to_pathn(json_string_value(v), json_string_length(v), true, ret_path, &msg);
	if (r == -EREMOTE)
		rpc_reply_error(c, id, RPC_INVALID_REQUEST, "%s", msg);
	else if (r == -ENOMEM)
		rpc_reply_errno_internal(c, id, ENOMEM);
	else if (r < 0)
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", msg);
	free(msg);
	return r;
}

bool fs_refuse_sandbox(struct conn *c, json_t *id, json_t *sandbox)
{
	const char *type;

	if (!sandbox || json_is_null(sandbox))
		return false;
	type = json_string_value(json_object_get(json_object_get(sandbox, "permissions"), "type"));
	if (type && strcmp(type, "disabled") == 0)
		return false;
	log_warning("Refusing a sandboxed filesystem request: sandboxing is not available");
	rpc_reply_error(c, id, RPC_INVALID_PARAMS, "sandbox intent cannot be enforced on this executor");
	return true;
}

json_t *fs_uri_json(const char *path)
{
	char *u = file_uri_from_path(path);
	json_t *j = u ? json_string(u) : NULL;

	free(u);
	return j;
}

/* Sandboxable methods (those that take a `sandbox`) go to the helper when it restricts. */
static const struct rpc_method fs_methods[] = {
	{ "fs/readFile", "filesystem", fs_rpc_read_file, fs_sandbox_forward },
	{ "fs/writeFile", "filesystem", fs_rpc_write_file, fs_sandbox_forward },
	{ "fs/createDirectory", "filesystem", fs_rpc_create_directory, fs_sandbox_forward },
	{ "fs/getMetadata", "filesystem", fs_rpc_get_metadata, fs_sandbox_forward },
	{ "fs/canonicalize", "filesystem", fs_rpc_canonicalize, fs_sandbox_forward },
	{ "fs/readDirectory", "filesystem", fs_rpc_read_directory, fs_sandbox_forward },
	{ "fs/remove", "filesystem", fs_rpc_remove, fs_sandbox_forward },
	{ "fs/copy", "filesystem", fs_rpc_copy, fs_sandbox_forward },
	{ "fs/rename", "filesystem", fs_rpc_rename, fs_sandbox_forward },
	{ "fs/open", "filesystem", fs_rpc_open, NULL },
	{ "fs/readBlock", "filesystem", fs_rpc_read_block, NULL },
	{ "fs/writeBlock", "filesystem", fs_rpc_write_block, NULL },
	{ "fs/close", "filesystem", fs_rpc_close, NULL },
	{ "fs/walk", "filesystem", fs_rpc_walk, fs_sandbox_forward },
	{ "fs/watchMissing", "filesystem", fs_rpc_watch_missing, NULL },
	{ "fs/watch", "filesystem", fs_rpc_watch, NULL },
	{ "fs/unwatch", "filesystem", fs_rpc_unwatch, NULL },
};

int fs_methods_register(void)
{
	return rpc_methods_register(fs_methods, ELEMENTSOF(fs_methods));
}
