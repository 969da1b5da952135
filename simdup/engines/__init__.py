"""Engines that run the scan stages somewhere other than this one process.

:mod:`simdup.engines.dask.partitions`, :mod:`~simdup.engines.dask.shuffle` and
:mod:`~simdup.engines.dask.joins` hold the work of one partition (plain functions over numpy
arrays, importable without any engine); :mod:`simdup.engines.dask` schedules that work on
a Dask cluster, stage by stage (:mod:`~simdup.engines.dask.stages`), through a client of
:mod:`~simdup.engines.dask.cluster`. Dask is imported only by the latter, so the core install
stays light: ``pip install 'simdup[dask]'`` adds it.
"""
