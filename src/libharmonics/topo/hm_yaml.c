/*
 * hm_yaml.c - the strict YAML subset reader of hm_yaml.h.
 *
 * Two passes: the lines (comments and blanks dropped, indentation counted),
 * then a recursive descent in which a node's indentation decides where it
 * ends. The compact "- key: v" form is read by narrowing the item's line to
 * what follows "- ", with the indentation of that text, and reading a node
 * there: the mapping then continues on the lines indented as far.
 */
#include "hm_yaml.h"

#include <stdlib.h>
#include <string.h>

#include "hm_topo_build.h"

typedef struct {
	int no;     /* line number in the file */
	int ind;    /* columns of indentation */
	char *text; /* after the indentation, comment and trailing blanks removed */
} yline_t;

typedef struct {
	const char *fname;
	yline_t *v;
	int n, cap, at;
	char **bufs; /* owned line texts */
	hm_err_t *err;
} yparse_t;

static hm_yaml_t *node_new(hm_yaml_kind_t kind, int line)
{
	hm_yaml_t *y = calloc(1, sizeof(*y));

	if (y) {
		y->kind = kind;
		y->line = line;
	}
	return y;
}

void hm_yaml_free(hm_yaml_t *y)
{
	if (!y)
		return;
	for (int i = 0; i < y->n; i++) {
		hm_yaml_free(y->items[i]);
		if (y->keys)
			free(y->keys[i]);
	}
	free(y->items);
	free(y->keys);
	free(y->key_lines);
	free(y->str);
	free(y);
}

const char *hm_yaml_kind_name(hm_yaml_kind_t kind)
{
	return kind == HM_YAML_MAP ? "a mapping" : kind == HM_YAML_SEQ ? "a list" : "a scalar";
}

const hm_yaml_t *hm_yaml_get(const hm_yaml_t *map, const char *key, int *line)
{
	if (!map || map->kind != HM_YAML_MAP)
		return NULL;
	for (int i = 0; i < map->n; i++)
		if (strcmp(map->keys[i], key) == 0) {
			if (line)
				*line = map->key_lines[i];
			return map->items[i];
		}
	return NULL;
}

static hm_rc_t nomem(yparse_t *p)
{
	return hm_err_set(p->err, HM_ERR_NOMEM, "%s: out of memory", p->fname);
}

/* Append child (and key) to a SEQ or MAP; child is freed on failure. */
static hm_rc_t node_add(yparse_t *p, hm_yaml_t *y, char *key, int key_line, hm_yaml_t *child)
{
	hm_yaml_t **items = realloc(y->items, (size_t)(y->n + 1) * sizeof(*items));

	if (items)
		y->items = items;
	if (items && key) {
		char **keys = realloc(y->keys, (size_t)(y->n + 1) * sizeof(*keys));
		int *lines =
		    keys ? realloc(y->key_lines, (size_t)(y->n + 1) * sizeof(*lines)) : NULL;

		if (keys)
			y->keys = keys;
		if (lines)
			y->key_lines = lines;
		if (!lines)
			items = NULL;
	}
	if (!items) {
		hm_yaml_free(child);
		free(key);
		return nomem(p);
	}
	y->items[y->n] = child;
	if (key) {
		y->keys[y->n] = key;
		y->key_lines[y->n] = key_line;
	}
	y->n++;
	return HM_OK;
}

/* Where a comment starts ('#' at the start or after a blank, outside quotes). */
static char *comment_start(char *s)
{
	char q = 0;

	for (char *c = s; *c; c++) {
		char prev = c == s ? ' ' : c[-1];

		if (q) {
			if (q == '"' && *c == '\\' && c[1])
				c++;
			else if (*c == q)
				q = 0;
		} else if ((*c == '\'' || *c == '"') && strchr(" \t[,:", prev)) {
			q = *c;
		} else if (*c == '#' && (prev == ' ' || prev == '\t')) {
			return c;
		}
	}
	return NULL;
}

/* Pass one: significant lines with their indentation. */
static hm_rc_t read_lines(FILE *f, yparse_t *p)
{
	char *buf = NULL, *line;
	size_t cap = 0;
	int no = 0;
	bool content = false, ended = false;
	hm_rc_t rc;

	for (;;) {
		char *c, *t;
		int ind = 0;
		size_t len;

		rc = hm_topo_read_line(f, p->fname, no + 1, &buf, &cap, &line, p->err);
		if (rc || !line)
			break;
		no++;
		while (line[ind] == ' ')
			ind++;
		if (line[ind] == '\t') {
			rc = hm_err_set(p->err, HM_ERR_PARSE,
					"%s:%d: tab in the indentation; YAML indents with spaces",
					p->fname, no);
			break;
		}
		t = line + ind;
		if ((c = comment_start(t)) || *t == '#')
			*(c ? c : t) = '\0';
		len = strlen(t);
		while (len > 0 && (t[len - 1] == ' ' || t[len - 1] == '\t'))
			t[--len] = '\0';
		if (!len)
			continue;
		if (ended) {
			rc =
			    hm_err_set(p->err, HM_ERR_PARSE,
				       "%s:%d: content after the document end '...'", p->fname, no);
			break;
		}
		if (ind == 0 && (strcmp(t, "---") == 0 || strncmp(t, "--- ", 4) == 0)) {
			if (content || strcmp(t, "---") != 0) {
				rc =
				    hm_err_set(p->err, HM_ERR_PARSE,
					       "%s:%d: '%.40s': one document is accepted, starting "
					       "with an optional '---' line",
					       p->fname, no, t);
				break;
			}
			continue;
		}
		if (ind == 0 && strcmp(t, "...") == 0) {
			ended = true;
			continue;
		}
		if (ind == 0 && *t == '%') {
			rc = hm_err_set(p->err, HM_ERR_PARSE,
					"%s:%d: YAML directives ('%.40s') are not accepted",
					p->fname, no, t);
			break;
		}
		if (p->n == p->cap) {
			int ncap = p->cap ? 2 * p->cap : 64;
			yline_t *v = realloc(p->v, (size_t)ncap * sizeof(*v));
			char **b = realloc(p->bufs, (size_t)ncap * sizeof(*b));

			if (v)
				p->v = v;
			if (b)
				p->bufs = b;
			if (!v || !b) {
				rc = nomem(p);
				break;
			}
			p->cap = ncap;
		}
		if (!(p->bufs[p->n] = strdup(t))) {
			rc = nomem(p);
			break;
		}
		p->v[p->n] = (yline_t){no, ind, p->bufs[p->n]};
		p->n++;
		content = true;
	}
	free(buf);
	return rc;
}

static bool seq_item(const char *t)
{
	return t[0] == '-' && (t[1] == '\0' || t[1] == ' ');
}

/* A quoted scalar at s (s[0] is the quote): unquoted copy in *out, end in *end. */
static hm_rc_t quoted(yparse_t *p, int line, const char *s, char **out, const char **end)
{
	char q = s[0], *o = malloc(strlen(s) + 1);
	size_t n = 0;
	const char *c = s + 1;

	if (!o)
		return nomem(p);
	for (;; c++) {
		if (!*c) {
			free(o);
			return hm_err_set(p->err, HM_ERR_PARSE,
					  "%s:%d: unterminated %s-quoted value (a quoted value "
					  "ends on its line)",
					  p->fname, line, q == '"' ? "double" : "single");
		}
		if (q == '\'' && *c == '\'') {
			if (c[1] != '\'')
				break;
			o[n++] = '\'';
			c++;
		} else if (q == '"' && *c == '"') {
			break;
		} else if (q == '"' && *c == '\\') {
			const char *from = "\\\"/nt", *to = "\\\"/\n\t",
				   *k = c[1] ? strchr(from, c[1]) : NULL;

			if (!k) {
				free(o);
				return hm_err_set(p->err, HM_ERR_PARSE,
						  "%s:%d: escape '\\%c' in a double-quoted value; "
						  "accepted: \\\\ \\\" \\/ \\n \\t",
						  p->fname, line, c[1] ? c[1] : ' ');
			}
			o[n++] = to[k - from];
			c++;
		} else {
			o[n++] = *c;
		}
	}
	o[n] = '\0';
	*out = o;
	*end = c + 1;
	return HM_OK;
}

static hm_rc_t indicator(yparse_t *p, int line, const char *s)
{
	static const struct {
		char c;
		const char *what;
	} ind[] = {{'&', "anchors"},       {'*', "aliases"},           {'!', "tags"},
		   {'|', "block scalars"}, {'>', "block scalars"},     {'{', "flow mappings"},
		   {'@', "reserved '@'"},  {'`', "reserved '`'"},      {'%', "directives"},
		   {']', "a stray ']'"},   {'?', "complex keys ('?')"}};

	for (size_t i = 0; i < sizeof(ind) / sizeof(ind[0]); i++)
		if (s[0] == ind[i].c)
			return hm_err_set(p->err, HM_ERR_PARSE,
					  "%s:%d: '%.40s': YAML %s are not accepted (topology.yaml "
					  "needs mappings, lists and plain or quoted values)",
					  p->fname, line, s, ind[i].what);
	return HM_OK;
}

/* A scalar filling s (plain or quoted); stop: characters that end a plain one. */
static hm_rc_t scalar(yparse_t *p, int line, const char *s, const char *stop, hm_yaml_t **out,
		      const char **end)
{
	hm_yaml_t *y;
	hm_rc_t rc;

	*out = NULL;
	if (!(y = node_new(HM_YAML_SCALAR, line)))
		return nomem(p);
	if (*s == '\'' || *s == '"') {
		y->quoted = true;
		rc = quoted(p, line, s, &y->str, end);
	} else if ((rc = indicator(p, line, s)) == HM_OK) {
		size_t len = strcspn(s, stop);

		*end = s + len;
		while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
			len--;
		y->str = strndup(s, len);
		rc = y->str ? HM_OK : nomem(p);
		if (rc == HM_OK && (strstr(y->str, ": ") || (len && y->str[len - 1] == ':')))
			rc = hm_err_set(p->err, HM_ERR_PARSE,
					"%s:%d: '%.60s': a plain value cannot hold ': ' or end "
					"with ':' (quote it)",
					p->fname, line, y->str);
	}
	if (rc) {
		hm_yaml_free(y);
		return rc;
	}
	*out = y;
	return HM_OK;
}

/* The value written on a key's line: a flow list [a, b] or a scalar. */
static hm_rc_t inline_value(yparse_t *p, int line, const char *s, hm_yaml_t **out)
{
	hm_yaml_t *y, *item;
	const char *end;
	hm_rc_t rc;

	*out = NULL;
	if (*s != '[') {
		if ((rc = scalar(p, line, s, "", &y, &end)) == HM_OK && *end) {
			hm_yaml_free(y);
			return hm_err_set(p->err, HM_ERR_PARSE,
					  "%s:%d: '%.40s' after a quoted value", p->fname, line,
					  end);
		}
		*out = rc ? NULL : y;
		return rc;
	}
	if (!(y = node_new(HM_YAML_SEQ, line)))
		return nomem(p);
	s++;
	while (*s == ' ')
		s++;
	rc = HM_OK;
	while (rc == HM_OK && *s != ']') {
		if (!*s || *s == ',' || *s == '[') {
			rc = hm_err_set(p->err, HM_ERR_PARSE,
					"%s:%d: flow list: %s; accepted: [a, b] on one line",
					p->fname, line,
					!*s         ? "no closing ']'"
					: *s == ',' ? "empty item"
						    : "nested list");
			break;
		}
		if ((rc = scalar(p, line, s, ",]", &item, &end)) != HM_OK ||
		    (rc = node_add(p, y, NULL, 0, item)) != HM_OK)
			break;
		for (s = end; *s == ' '; s++)
			;
		if (*s == ',')
			for (s++; *s == ' '; s++)
				;
		else if (*s != ']')
			rc = hm_err_set(p->err, HM_ERR_PARSE,
					"%s:%d: flow list: '%.40s' where ',' or ']' was expected",
					p->fname, line, s);
	}
	if (rc == HM_OK && s[1])
		rc = hm_err_set(p->err, HM_ERR_PARSE, "%s:%d: '%.40s' after a flow list", p->fname,
				line, s + 1);
	if (rc) {
		hm_yaml_free(y);
		return rc;
	}
	*out = y;
	return HM_OK;
}

static hm_rc_t block(yparse_t *p, int depth, hm_yaml_t **out);

/* The value of a key or item whose own line holds nothing more. */
static hm_rc_t nested(yparse_t *p, int ind, int line, bool indentless_seq, int depth,
		      hm_yaml_t **out)
{
	const yline_t *next = p->at < p->n ? &p->v[p->at] : NULL;

	if (next &&
	    (next->ind > ind || (indentless_seq && next->ind == ind && seq_item(next->text))))
		return block(p, depth + 1, out);
	*out = node_new(HM_YAML_SCALAR, line); /* null */
	if (*out && !((*out)->str = strdup("")))
		hm_yaml_free(*out), *out = NULL;
	return *out ? HM_OK : nomem(p);
}

static hm_rc_t seq(yparse_t *p, int ind, int depth, hm_yaml_t *y)
{
	hm_rc_t rc = HM_OK;

	while (rc == HM_OK && p->at < p->n && p->v[p->at].ind == ind &&
	       seq_item(p->v[p->at].text)) {
		yline_t *l = &p->v[p->at];
		char *rest = l->text + 1;
		hm_yaml_t *child = NULL;

		while (*rest == ' ')
			rest++;
		if (!*rest) {
			p->at++;
			rc = nested(p, ind, l->no, false, depth, &child);
		} else {
			/* Narrow the line to the item's text: a node at that column. */
			l->ind += (int)(rest - l->text);
			l->text = rest;
			rc = block(p, depth + 1, &child);
		}
		if (rc == HM_OK)
			rc = node_add(p, y, NULL, 0, child);
	}
	return rc;
}

/* A key at the start of t: its text in *key, the value's start in *rest. */
static hm_rc_t map_key(yparse_t *p, const yline_t *l, char **key, char **rest)
{
	const char *end;
	char *t = l->text, *colon;
	hm_rc_t rc;

	*key = NULL;
	if (*t == '\'' || *t == '"') {
		if ((rc = quoted(p, l->no, t, key, &end)) != HM_OK)
			return rc;
		colon = (char *)end;
		if (*colon != ':' || (colon[1] && colon[1] != ' ')) {
			free(*key);
			*key = NULL;
			return hm_err_set(p->err, HM_ERR_PARSE,
					  "%s:%d: expected ':' after the quoted key", p->fname,
					  l->no);
		}
	} else {
		if ((rc = indicator(p, l->no, t)) != HM_OK)
			return rc;
		for (colon = t; (colon = strchr(colon, ':')); colon++)
			if (!colon[1] || colon[1] == ' ')
				break;
		if (!colon || colon == t || *t == '[')
			return hm_err_set(p->err, HM_ERR_PARSE,
					  "%s:%d: '%.60s': expected 'key: value' or '- item' at "
					  "this indentation",
					  p->fname, l->no, t);
		if (!(*key = strndup(t, (size_t)(colon - t))))
			return nomem(p);
	}
	for (*rest = colon + 1; **rest == ' '; (*rest)++)
		;
	return HM_OK;
}

static hm_rc_t map(yparse_t *p, int ind, int depth, hm_yaml_t *y)
{
	hm_rc_t rc = HM_OK;

	while (rc == HM_OK && p->at < p->n && p->v[p->at].ind == ind &&
	       !seq_item(p->v[p->at].text)) {
		const yline_t *l = &p->v[p->at];
		char *key = NULL, *rest = NULL;
		int line = l->no, seen;
		hm_yaml_t *child = NULL;

		if ((rc = map_key(p, l, &key, &rest)) != HM_OK)
			break;
		if (hm_yaml_get(y, key, &seen)) {
			rc = hm_err_set(p->err, HM_ERR_PARSE,
					"%s:%d: key '%.60s' given twice (first at line %d)",
					p->fname, line, key, seen);
			free(key);
			break;
		}
		p->at++;
		if (!*rest) {
			rc = nested(p, ind, line, true, depth, &child);
		} else {
			rc = inline_value(p, line, rest, &child);
			if (rc == HM_OK && p->at < p->n && p->v[p->at].ind > ind)
				rc = hm_err_set(p->err, HM_ERR_PARSE,
						"%s:%d: more indented than the key of line %d, "
						"whose value is on its line (multi-line values are "
						"not accepted)",
						p->fname, p->v[p->at].no, line);
		}
		if (rc) {
			hm_yaml_free(child);
			free(key);
			break;
		}
		rc = node_add(p, y, key, line, child);
	}
	return rc;
}

/* The node starting at the current line; it ends where the indentation does. */
static hm_rc_t block(yparse_t *p, int depth, hm_yaml_t **out)
{
	const yline_t *l = &p->v[p->at];
	int ind = l->ind;
	hm_yaml_t *y;
	hm_rc_t rc;

	*out = NULL;
	if (depth > HM_YAML_MAX_DEPTH)
		return hm_err_set(p->err, HM_ERR_PARSE, "%s:%d: nested deeper than %d levels",
				  p->fname, l->no, HM_YAML_MAX_DEPTH);
	if (!seq_item(l->text)) {
		const char *t = l->text;
		bool is_map = *t == '\'' || *t == '"' ? strstr(t, ": ") || t[strlen(t) - 1] == ':'
						      : strchr(t, ':') != NULL;

		if (!is_map) {
			p->at++;
			rc = inline_value(p, l->no, t, &y);
			if (rc == HM_OK && p->at < p->n && p->v[p->at].ind > ind)
				rc = hm_err_set(p->err, HM_ERR_PARSE,
						"%s:%d: more indented than the value of line %d "
						"(multi-line values are not accepted)",
						p->fname, p->v[p->at].no, l->no);
			if (rc)
				hm_yaml_free(y), y = NULL;
			*out = y;
			return rc;
		}
	}
	if (!(y = node_new(seq_item(l->text) ? HM_YAML_SEQ : HM_YAML_MAP, l->no)))
		return nomem(p);
	rc = y->kind == HM_YAML_SEQ ? seq(p, ind, depth, y) : map(p, ind, depth, y);
	if (rc == HM_OK && p->at < p->n && p->v[p->at].ind > ind)
		rc = hm_err_set(p->err, HM_ERR_PARSE,
				"%s:%d: indentation of %d where %s at %d columns goes on (or ends)",
				p->fname, p->v[p->at].no, p->v[p->at].ind,
				hm_yaml_kind_name(y->kind), ind);
	if (rc) {
		hm_yaml_free(y);
		return rc;
	}
	*out = y;
	return HM_OK;
}

hm_rc_t hm_yaml_read(FILE *f, const char *fname, hm_yaml_t **out, hm_err_t *err)
{
	yparse_t p = {.fname = fname ? fname : "yaml", .err = err};
	hm_rc_t rc;

	*out = NULL;
	rc = read_lines(f, &p);
	if (rc == HM_OK && p.n == 0)
		rc = hm_err_set(err, HM_ERR_PARSE, "%s: empty document", p.fname);
	if (rc == HM_OK)
		rc = block(&p, 0, out);
	if (rc == HM_OK && p.at < p.n) {
		rc = hm_err_set(err, HM_ERR_PARSE,
				"%s:%d: '%.60s' at indentation %d after the top-level %s, which "
				"started at %d",
				p.fname, p.v[p.at].no, p.v[p.at].text, p.v[p.at].ind,
				hm_yaml_kind_name((*out)->kind), p.v[0].ind);
		hm_yaml_free(*out);
		*out = NULL;
	}
	for (int i = 0; i < p.n; i++)
		free(p.bufs[i]);
	free(p.bufs);
	free(p.v);
	return rc;
}
