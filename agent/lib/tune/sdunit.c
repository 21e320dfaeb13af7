/* SPDX-License-Identifier: MIT */
/* sdunit.c — a command as a transient systemd service (see sdunit.h).
 *
 * Divisions: the names, the calling process's own unit, the start message
 * (StartTransientUnit's properties), stopping and waiting. */
#include "tune/sdunit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-login.h>
#include <time.h>

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
#define SD_UNIT "org.freedesktop.systemd1.Unit"

/* ---- names and the own unit ----------------------------------------------- */

bool sdunit_name_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n <= 8 || n >= SDUNIT_NAME_MAX || strcmp(s + n - 8, ".service") || s[0] == '.')
		return false;
	for (size_t i = 0; i < n - 8; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_.@-", s[i]))
			return false;
	return true;
}

bool sdunit_own(char *buf, size_t len)
{
	char *unit = NULL;
	sd_bus *bus = NULL;
	bool ok = false;

	if (sd_booted() <= 0 || sd_pid_get_unit(0, &unit) < 0 || !unit)
		goto out;
	if (!sdunit_name_valid(unit) || strlen(unit) >= len || sd_bus_open_system(&bus) < 0)
		goto out;
	snprintf(buf, len, "%s", unit);
	ok = true;
out:
	sd_bus_unref(bus);
	free(unit);
	return ok;
}

/* A bus error as -errno, with err naming the unit and systemd's message. */
static int bus_fail(const char *what, const char *name, int r, const sd_bus_error *e, struct nt_err *err)
{
	if (e && sd_bus_error_has_name(e, "org.freedesktop.systemd1.UnitExists"))
		return err_set(err, -EEXIST, "%s %s: a unit of that name is loaded already", what, name);
	if (e && sd_bus_error_is_set(e))
		return err_set(err, -EIO, "%s %s: systemd said: %s", what, name, e->message ? e->message : e->name);
	return err_set(err, r == -ENOMEM ? -ENOMEM : -EIO, "%s %s: %s", what, name, nt_strerror(-r));
}

/* ---- the start message ---------------------------------------------------- */

/* ExecStart=: one command, a(sasb), its failure not ignored. */
static int append_exec(sd_bus_message *m, char *const *argv)
{
	int r;

	if ((r = sd_bus_message_open_container(m, 'r', "sv")) < 0 ||
	    (r = sd_bus_message_append(m, "s", "ExecStart")) < 0 ||
	    (r = sd_bus_message_open_container(m, 'v', "a(sasb)")) < 0 ||
	    (r = sd_bus_message_open_container(m, 'a', "(sasb)")) < 0 ||
	    (r = sd_bus_message_open_container(m, 'r', "sasb")) < 0 ||
	    (r = sd_bus_message_append(m, "s", argv[0])) < 0 ||
	    (r = sd_bus_message_append_strv(m, (char **)argv)) < 0 ||
	    (r = sd_bus_message_append(m, "b", 0)) < 0)
		return r;
	for (int i = 0; i < 4; i++)
		if ((r = sd_bus_message_close_container(m)) < 0)
			return r;
	return 0;
}

/* Every property but ExecStart=. */
static int append_props(sd_bus_message *m, const struct sdunit_spec *s)
{
	int r = 0;

	if (s->description)
		r = sd_bus_message_append(m, "(sv)", "Description", "s", s->description);
	if (r >= 0)
		r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)", "Type", "s", "exec", "KillMode", "s", "mixed",
					  "CollectMode", "s", "inactive-or-failed",
					  "TimeoutStopUSec", "t", s->timeout_stop_usec);
	if (r >= 0 && s->runtime_max_usec)
		r = sd_bus_message_append(m, "(sv)", "RuntimeMaxUSec", "t", s->runtime_max_usec);
	if (r >= 0 && s->delegate)
		r = sd_bus_message_append(m, "(sv)", "Delegate", "b", 1);
	if (r >= 0 && s->bind_to)
		r = sd_bus_message_append(m, "(sv)(sv)", "BindsTo", "as", 1, s->bind_to, "After", "as", 1, s->bind_to);
	if (r >= 0 && s->stdout_fd >= 0)
		r = sd_bus_message_append(m, "(sv)", "StandardOutputFileDescriptor", "h", s->stdout_fd);
	if (r >= 0 && s->stderr_fd >= 0)
		r = sd_bus_message_append(m, "(sv)", "StandardErrorFileDescriptor", "h", s->stderr_fd);
	return r;
}

static int start_message(sd_bus *bus, const struct sdunit_spec *s, sd_bus_message **ret)
{
	sd_bus_message *m = NULL;
	int r;

	if ((r = sd_bus_message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_MANAGER, "StartTransientUnit")) < 0 ||
	    (r = sd_bus_message_append(m, "ss", s->name, "fail")) < 0 ||
	    (r = sd_bus_message_open_container(m, 'a', "(sv)")) < 0 || (r = append_props(m, s)) < 0 ||
	    (r = append_exec(m, s->argv)) < 0 || (r = sd_bus_message_close_container(m)) < 0 ||
	    (r = sd_bus_message_append(m, "a(sa(sv))", 0)) < 0) {
		sd_bus_message_unref(m);
		return r;
	}
	*ret = m;
	return 0;
}

int sdunit_start(const struct sdunit_spec *s, struct nt_err *err)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL, *reply = NULL;
	sd_bus *bus = NULL;
	int r;

	if (!sdunit_name_valid(s->name))
		return err_set(err, -EINVAL, "'%s' is not a service's name", s->name ? s->name : "");
	if (!s->argv || !s->argv[0] || s->argv[0][0] != '/')
		return err_set(err, -EINVAL, "unit %s: its command must be an absolute path", s->name);
	if ((r = sd_bus_open_system(&bus)) < 0)
		return err_set(err, -ENOTCONN, "unit %s: the system bus: %s", s->name, nt_strerror(-r));
	if ((r = start_message(bus, s, &m)) < 0)
		r = bus_fail("unit", s->name, r, NULL, err);
	else if ((r = sd_bus_call(bus, m, 0, &e, &reply)) < 0)
		r = bus_fail("starting unit", s->name, r, &e, err);
	else
		r = 0;
	sd_bus_error_free(&e);
	sd_bus_message_unref(reply);
	sd_bus_message_unref(m);
	sd_bus_flush_close_unref(bus);
	return r;
}

/* ---- stopping --------------------------------------------------------------- */

/* 1: the unit is gone or inactive; 0: not yet; -errno. */
static int unit_ended(sd_bus *bus, const char *name)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	const char *path;
	char *state = NULL;
	int r = sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "GetUnit", &e, &reply, "s", name);

	if (r < 0) {
		r = sd_bus_error_has_name(&e, "org.freedesktop.systemd1.NoSuchUnit") ? 1 : r;
		goto out;
	}
	if ((r = sd_bus_message_read(reply, "o", &path)) < 0 ||
	    (r = sd_bus_get_property_string(bus, SD_DEST, path, SD_UNIT, "ActiveState", &e, &state)) < 0)
		goto out;
	r = !strcmp(state, "inactive") || !strcmp(state, "failed");
out:
	free(state);
	sd_bus_message_unref(reply);
	sd_bus_error_free(&e);
	return r;
}

int sdunit_stop(const char *name, double wait_s, struct nt_err *err)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus *bus = NULL;
	int r;

	if (!sdunit_name_valid(name))
		return err_set(err, -EINVAL, "'%s' is not a service's name", name ? name : "");
	if ((r = sd_bus_open_system(&bus)) < 0)
		return err_set(err, -ENOTCONN, "unit %s: the system bus: %s", name, nt_strerror(-r));
	r = sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "StopUnit", &e, NULL, "ss", name, "replace");
	if (r < 0 && !sd_bus_error_has_name(&e, "org.freedesktop.systemd1.NoSuchUnit")) {
		r = bus_fail("stopping unit", name, r, &e, err);
		goto out;
	}
	for (int i = 0;; i++) {
		if ((r = unit_ended(bus, name)) != 0)
			break;
		if (i >= (int)(wait_s * 10)) {
			r = err_set(err, -ETIMEDOUT, "unit %s: still stopping after %.0f s", name, wait_s);
			goto out;
		}
		nanosleep(&(struct timespec){ 0, 100 * 1000 * 1000 }, NULL);
	}
	r = r < 0 ? bus_fail("unit", name, r, NULL, err) : 0;
out:
	sd_bus_error_free(&e);
	sd_bus_flush_close_unref(bus);
	return r;
}
