/* LaTeX sources of one paper -> the text a language model is trained on, as the
 * RedPajama arXiv recipe does: the main file (the one with \documentclass), \input and
 * \include resolved among the paper's own files (never the file system), comments
 * dropped, argument-less \newcommand/\def macros expanded, and only the part from the
 * first \section-like heading up to the bibliography kept. The output stays LaTeX.
 *
 * Everything works on memory; sizes are capped by the caller's buffers.
 */
#ifndef SL_EXTRACT_LATEX_H
#define SL_EXTRACT_LATEX_H

#include <stddef.h>

struct sl_buf;

/* One file of a paper (name as stored in its archive; not owned). */
struct latex_file {
    const char *name;
    const char *data;
    size_t len;
};

/* Index of the main .tex file, or -1: the one with \documentclass (several: the one with
 * \begin{document}, then the largest); a lone .tex file is the main file too. */
long latex_find_main(const struct latex_file *f, size_t n);

/* Drop comments the way arxiv_latex_cleaner does: a line that is only a comment goes with
 * its newline; an inline comment leaves its '%'; "\%" is kept. Appends to out. */
int latex_strip_comments(const char *p, size_t n, struct sl_buf *out);

/* Remove \begin{comment}...\end{comment} and resolve \iffalse/\iftrue ... [\else ...] \fi. */
int latex_resolve_conditionals(const char *p, size_t n, struct sl_buf *out);

/* The main file with its \input/\include expanded (comments stripped in each file;
 * nesting up to 8 levels; an input that is not among the files is dropped and counted in
 * *missing). Appends to out (cap: out->max). */
int latex_flatten(const struct latex_file *f, size_t n, size_t main, struct sl_buf *out,
                  size_t *missing);

/* Expand argument-less \newcommand{\x}{...}, \renewcommand, \def\x{...} (definitions
 * removed). Appends to out. */
int latex_expand_macros(const char *p, size_t n, struct sl_buf *out);

/* Keep from the first \part/\chapter/\section/\subsection (or \begin{document} when there
 * is none) to the bibliography or \end{document}; squeeze runs of blank lines. */
int latex_cut_body(const char *p, size_t n, struct sl_buf *out);

/* The whole recipe: flatten, conditionals, macros, cut. *missing as for latex_flatten. */
int latex_clean_paper(const struct latex_file *f, size_t n, size_t main, struct sl_buf *out,
                      size_t *missing);

#endif
