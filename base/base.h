/* SPDX-License-Identifier: MIT */
/*
 * The ground floor (library `base`): what every other folder of the tree may
 * use and nothing here may use (libc only). A file that needs several of
 * these includes this header; one that needs a single helper may include
 * that helper's own header.
 *
 *   macro.h   cleanup attributes, TAKE_PTR/TAKE_FD, ELEMENTSOF, container_of
 *   list.h    intrusive doubly linked list
 *   buf.h     growable byte buffer
 *   errmsg.h  an error code with a malloc'd text saying why
 *   strmap.h  hash map from byte strings (NUL allowed) to pointers
 *   hex.h     one hex-digit decoder for the codecs
 *   utf8-lead.h  the lead byte of a UTF-8 sequence, for the validators
 *   log.h     logging to stderr (text or JSON lines), the audit log's sink
 */
#pragma once

#include "buf.h"
#include "errmsg.h"
#include "hex.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "strmap.h"
#include "utf8-lead.h"
