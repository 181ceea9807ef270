"""A report's Markdown and CSV, of any kind (report.py; each kind's own rows are its folder's
export), and the kernel facts laid side by side."""
