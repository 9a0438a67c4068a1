"""Showing: what people see — every post and notice, text formats, charts, signed page links, digests and exports.

It may read through storage and use deliberation's results; it never advances a discussion or decides who may act.
"""
