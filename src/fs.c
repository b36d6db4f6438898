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
#include "rpc.h"

int fs_param_path(struct conn *c, json_t *id, json_t *v, char **ret_path)
{
	char *msg = NULL;
	int r;

	if (memchr(json_string_value(v), 0, json_string_length(v))) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "invalid URI: path contains a NUL byte");
		return -EINVAL;
	}
	r = file_uri_to_path(json_string_value(v), true, ret_path, &msg);
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
